"""What a snapshot of a dataset contains, and the identity of that content (to tell whether it changed)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from django.apps import apps
from django.db import connection

from comparna.models import Dataset, ReferenceStructure, Score, Subset, Target
from comparna.rna.metric_registry import COUNT_FIELDS
from predictors.models import Prediction


def current_predictions(dataset: Dataset):
    """Finished predictions of each public method's current version on ``dataset`` (what the rankings use;
    owners' development methods and self-reported uploads never enter a snapshot)."""
    return (
        Prediction.objects.finished()
        .public()
        .filter(target__dataset=dataset, method_version__is_current=True)
    )


def dataset_state_hash(dataset: Dataset) -> str:
    """Identity of everything a snapshot of ``dataset`` would contain (rankings excluded).

    Streams over the rows in primary-key order, so two calls agree exactly when nothing changed: targets,
    references, subsets and their members, current method versions and their finished predictions and counts.
    """
    h = hashlib.sha256()

    def feed(rows: Iterable) -> None:
        for row in rows:
            h.update(json.dumps(row, default=str, separators=(",", ":")).encode())
            h.update(b"\n")
        h.update(b"\x00")

    feed([[dataset.slug, dataset.version, dataset.definitions, dataset.kind, dataset.name]])
    feed(
        Target.objects.filter(dataset=dataset)
        .order_by("pk")
        .values_list("source_id", "sequence", "rna_class", "release_date")
        .iterator(chunk_size=2000)
    )
    feed(
        ReferenceStructure.objects.filter(target__dataset=dataset)
        .order_by("pk")
        .values_list("target__source_id", "definition", "pairs")
        .iterator(chunk_size=2000)
    )
    feed(Subset.objects.filter(dataset=dataset).order_by("pk").values_list("slug", "definition"))
    feed(
        Subset.targets.through.objects.filter(subset__dataset=dataset)
        .order_by("pk")
        .values_list("subset__slug", "target__source_id")
        .iterator(chunk_size=5000)
    )
    predictions = current_predictions(dataset)
    feed(
        predictions.order_by("pk")
        .values_list(
            "method_version__method__name",
            "method_version__method__active",
            "method_version__fingerprint",
            "target__source_id",
            "status",
            "pairs",
        )
        .iterator(chunk_size=2000)
    )
    feed(
        Score.objects.filter(prediction__in=predictions)
        .order_by("pk")
        .values_list("prediction_id", "definition", *COUNT_FIELDS)
        .iterator(chunk_size=5000)
    )
    return h.hexdigest()


def rfam_families(dataset: Dataset) -> dict[int, tuple[str, str]]:
    """Target pk → (Rfam accession, family id) of its newest assignment, when the ingest app records them."""
    try:
        model = apps.get_model("ingest", "FamilyAssignment")
    except LookupError:
        return {}
    if model._meta.db_table not in connection.introspection.table_names():
        return {}
    out: dict[int, tuple[str, str]] = {}
    rows = model.objects.filter(target__dataset=dataset).order_by("target_id", "-assigned_at", "-pk")
    for target_id, accession, family in rows.values_list("target_id", "accession", "family_id"):
        out.setdefault(target_id, (accession, family))
    return out


def novelty_records(dataset: Dataset) -> dict[int, dict]:
    """Target pk → its PDB chain's novelty record (role, reason, similar chain), where ingest has one."""
    try:
        model = apps.get_model("ingest", "PdbChain")
    except LookupError:
        return {}
    rows = model.objects.filter(target__dataset=dataset).values_list(
        "target_id", "role", "reason", "similar_to__entry__pdb_id", "similar_to__chain_id"
    )
    return {
        t: {"role": role, "reason": reason, "similar_to": f"{pdb}_{chain}" if pdb else ""}
        for t, role, reason, pdb, chain in rows
    }
