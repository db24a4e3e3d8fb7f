"""Where a ranked result comes from (issue 36), and whether it is blind.

Four provenances, from who controls what produced the structure:

- *run by CompaRNA from reviewed code*: a method without an owner (the catalogue, or registered by staff),
  run by CompaRNA's own runners;
- *owner's program run by CompaRNA*: an owner's command or image, run by CompaRNA in its sandbox — the code
  is the owner's and may hold anything (a lookup table of public references, for instance);
- *owner's web service*: the answer of a service CompaRNA asked (synchronously or by callback) — computed
  wherever its owner likes, with whatever they like;
- *uploaded*: a structure its owner sent (the owners' API or page, the blind API).

Everything but the first is owner-controlled. An owner-controlled result on a target whose reference was
public before the method version was registered is *not blind*: the owner could have known the answer. A web
service's answer and an upload for a target whose reference is public when it arrives are self-reported
(:func:`predictors.uploads.is_self_reported`): never public, never ranked. Only targets released after a
version was registered — the weekly PDB set's later weeks and the blind track — test an owner's program
blind; the pages say so.
"""

from __future__ import annotations

import datetime as dt

from django.db import models

#: The runner recorded for a web service's callback (the answer to a job CompaRNA sent).
CALLBACK_RUNNER = "upload (callback)"


class Provenance(models.TextChoices):
    CATALOGUE = "catalogue", "run by CompaRNA from reviewed code"
    PROGRAM = "program", "owner's program run by CompaRNA"
    SERVICE = "service", "owner's web service"
    UPLOADED = "uploaded", "uploaded"


OWNER_CONTROLLED = frozenset({Provenance.PROGRAM, Provenance.SERVICE, Provenance.UPLOADED})


def method_provenance(*, kind: str, owned: bool) -> Provenance:
    """What runs a method's version: its spec's ``kind`` (command, image, web) and whether an owner
    registered it (``owned``). Web services are owner-controlled whoever registered them."""
    if kind == "web":
        return Provenance.SERVICE
    return Provenance.PROGRAM if owned else Provenance.CATALOGUE


def prediction_provenance(*, kind: str, owned: bool, uploaded: bool, runner: str) -> Provenance:
    """Where one prediction's structure came from (an upload that is a web service's callback is the
    service's answer, not an upload)."""
    if uploaded and runner != CALLBACK_RUNNER:
        return Provenance.UPLOADED
    return method_provenance(kind=kind, owned=owned)


def version_provenance(version) -> Provenance:
    """The provenance of a :class:`~predictors.models.MethodVersion`'s computed results."""
    return method_provenance(kind=(version.spec or {}).get("kind") or "command",
                             owned=version.method.owner_id is not None)


def of_prediction(prediction) -> Provenance:
    """The provenance of a :class:`~predictors.models.Prediction` (its version and method loaded)."""
    version = prediction.method_version
    return prediction_provenance(
        kind=(version.spec or {}).get("kind") or "command", owned=version.method.owner_id is not None,
        uploaded=prediction.uploaded, runner=prediction.runner,
    )


def reference_public_at(target) -> dt.datetime | None:
    """When ``target``'s reference became public: its blind week's release, else its PDB release day
    (00:00 UTC); None for a static set's target (public before any registration)."""
    blind = getattr(target, "blind", None) if _has_blind(target) else None
    if blind is not None:
        return blind.week.release_at
    if target.release_date is not None:
        return dt.datetime.combine(target.release_date, dt.time(), tzinfo=dt.UTC)
    return None


def _has_blind(target) -> bool:
    try:
        return target.blind is not None
    except Exception:  # noqa: BLE001 - RelatedObjectDoesNotExist: not a blind target
        return False


def is_not_blind(*, provenance: str, public_at: dt.datetime | None, registered_at: dt.datetime) -> bool:
    """An owner-controlled result on a target whose reference was public (``public_at``; None: always)
    before its method version was registered (``registered_at``)."""
    if provenance not in OWNER_CONTROLLED:
        return False
    return public_at is None or public_at <= registered_at


def describe(prediction, target=None) -> dict:
    """``{"provenance": code, "label": text, "not_blind": bool}`` of a prediction, for pages and the API."""
    provenance = of_prediction(prediction)
    target = target if target is not None else prediction.target
    not_blind = is_not_blind(provenance=provenance, public_at=reference_public_at(target),
                             registered_at=prediction.method_version.created_at)
    return {"provenance": provenance.value, "label": provenance.label, "not_blind": not_blind}
