"""Provenance labels of ranking rows and method pages (issue 36, :mod:`predictors.provenance`).

A ranking row is one method's current version: its provenance is that version's (catalogue, owner's program,
owner's web service). Whether its results are blind depends on the dataset: on a static set every reference
was public before any registration, so an owner-controlled row is *not blind*; on the weekly PDB set only the
targets released after the version was registered are blind. One query for the rows' methods, whatever the
number of targets.
"""

from __future__ import annotations

from comparna.models import Dataset
from predictors.models import MethodVersion
from predictors.provenance import OWNER_CONTROLLED, Provenance, method_provenance

#: What a ranking row shows (the full label is its title).
SHORT = {
    Provenance.CATALOGUE: "reviewed code",
    Provenance.PROGRAM: "owner's program",
    Provenance.SERVICE: "owner's web service",
    Provenance.UPLOADED: "uploaded",
}


def version_label(version: MethodVersion | None, dataset: Dataset | None = None) -> dict | None:
    """``{"provenance", "label", "short", "owner_controlled", "not_blind", "registered"}`` of a method's
    version (``not_blind``: a sentence for ``dataset``, empty when its results there are blind)."""
    if version is None:
        return None
    kind = (version.spec or {}).get("kind") or "command"
    return _label(method_provenance(kind=kind, owned=version.method.owner_id is not None),
                  version.created_at, dataset)


def _label(provenance: Provenance, registered, dataset: Dataset | None) -> dict:
    owner = provenance in OWNER_CONTROLLED
    not_blind = ""
    if owner and dataset is not None:
        if dataset.kind == Dataset.Kind.STATIC:
            not_blind = "not blind"
        elif dataset.kind == Dataset.Kind.PDB:
            not_blind = f"not blind on targets released before {registered:%Y-%m-%d}"
    return {"provenance": provenance.value, "label": provenance.label, "short": SHORT[provenance],
            "owner_controlled": owner, "not_blind": not_blind, "registered": registered}


def with_provenance(rows: list[dict], *, dataset: Dataset) -> list[dict]:
    """The ranking rows (``{"pk": method pk, ...}``) each with ``"provenance"`` (:func:`version_label`): one
    query for the current versions of the rows' methods."""
    pks = [r["pk"] for r in rows if r.get("pk")]
    current = {
        mpk: (spec, owner, created)
        for mpk, spec, owner, created in MethodVersion.objects.filter(
            method_id__in=pks, is_current=True
        ).values_list("method_id", "spec", "method__owner_id", "created_at")
    }
    for r in rows:
        found = current.get(r.get("pk"))
        if found is None:
            r["provenance"] = None
            continue
        spec, owner, created = found
        kind = (spec or {}).get("kind") or "command"
        r["provenance"] = _label(method_provenance(kind=kind, owned=owner is not None), created, dataset)
    return rows
