"""Predictions uploaded by a method's owner (web-service callbacks, the owners API, the blind track).

Only methods of kind ``web`` take uploads: a command or image method is run by CompaRNA, so its predictions
are what CompaRNA computed, never what someone sent. Every upload is validated against the target before
anything is stored — format, sequence length, pair indices, the sequence a BPSEQ/CT file carries — and a
rejected one changes nothing. A prediction that already has a final outcome is never replaced (predictions
are immutable; a new method version is the way to change them).

An upload its owner sends (the owners API and page, the blind API) for a target whose reference is public
is *self-reported* (issue 26): anyone can read a reference from ``/api/targets/<id>/`` and upload it as a
perfect prediction, so it is stored, scored and shown to its owner, marked, and never counted publicly
(:func:`predictors.models.public_prediction_q`). Only a blind target before its week's release (its
reference does not exist yet) takes owner uploads that count. The callback of a job CompaRNA sent (a
one-job token) is the web service's answer, like a synchronous one; a web service is owner-controlled too (it
computes wherever and with whatever its owner likes: issue 36), so its answer for a target whose reference
is public is self-reported the same way (:func:`is_self_reported`, also for synchronous answers in
:func:`predictors.execution.store_result`).
"""

from __future__ import annotations

import json

from django.db import transaction
from django.utils import timezone

from comparna import clock
from comparna.models import Target
from comparna.params import ascii_int
from comparna.rna.canonical import structure_to_text
from comparna.rna.formats import read_bpseq, read_ct
from comparna.rna.structure import StructureFormatError
from comparna.services.scoring import score_prediction
from predictors.core.parsers import ParsedPrediction, parse_probabilities
from predictors.core.webservice import parse_answer
from predictors.models import Method, Prediction

#: Formats an upload may use (``pairs`` is a JSON list ``[[i, j], ...]``, 1-based).
UPLOAD_FORMATS = ("dot-bracket", "bpseq", "ct", "pairs-json", "pairs")
MAX_UPLOAD_CHARS = 4 * 2**20
#: The upload source of a web service answering a job CompaRNA sent (the one-job token), not self-reported.
SERVICE_SOURCE = "callback"
#: States in which a prediction still takes an upload.
OPEN_STATES = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)


class UploadRejected(ValueError):
    """An upload that is not stored; ``status`` is the HTTP status that fits (400, 403, 404, 409)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _same(a: str, b: str) -> bool:
    return a.upper().replace("T", "U") == b.upper().replace("T", "U")


def owned_by_reference(user, ref) -> Method | None:
    """The user's method named by ``ref`` in an upload request: its id (ASCII digits) or its name; ``None``
    for anything not theirs."""
    ident = ascii_int(str(ref))
    mine = Method.objects.filter(owner=user)
    return (mine.filter(pk=ident) if ident is not None else mine.filter(name=ref)).first()


def parse_upload(*, sequence: str, structure, fmt: str, probabilities=None) -> ParsedPrediction:
    """Validate an uploaded structure against the target's ``sequence``.

    Raises
    ------
    UploadRejected
        Saying what is wrong: unknown format, wrong length, a pair index outside 1..L, a position paired
        twice, unbalanced brackets, a file whose sequence is not the target's, bad probabilities.
    """
    if fmt not in UPLOAD_FORMATS:
        raise UploadRejected(f"unknown format {fmt!r}; use one of {', '.join(UPLOAD_FORMATS)}")
    n = len(sequence)
    if fmt == "pairs":
        if not isinstance(structure, list):
            raise UploadRejected("format 'pairs' takes a JSON list of [i, j] pairs (1-based)")
        structure = json.dumps({"pairs": structure})
        fmt = "pairs-json"
    if not isinstance(structure, str):
        raise UploadRejected("'structure' must be a string in the given format")
    if len(structure) > MAX_UPLOAD_CHARS:
        raise UploadRejected(f"the structure is longer than {MAX_UPLOAD_CHARS} characters")
    try:
        if fmt in ("bpseq", "ct"):
            seq, _ = (read_bpseq if fmt == "bpseq" else read_ct)(structure)
            if len(seq) != n:
                raise UploadRejected(f"the {fmt.upper()} file has {len(seq)} nucleotides; the target has {n}")
            if not _same(seq, sequence):
                k = next(i for i, (a, b) in enumerate(zip(seq, sequence, strict=True)) if not _same(a, b))
                raise UploadRejected(
                    f"the {fmt.upper()} file's sequence differs from the target's at position {k + 1} "
                    f"({seq[k]} instead of {sequence[k]})"
                )
        parsed = parse_answer(fmt, structure, sequence)
        if parsed.structure.has_multiplets:
            seen: dict[int, tuple[int, int]] = {}
            for pair in sorted(parsed.structure.pairs):
                for k in pair:
                    if k in seen:
                        raise UploadRejected(
                            f"position {k} is paired twice ({seen[k][0]}-{seen[k][1]} and "
                            f"{pair[0]}-{pair[1]}); a predicted secondary structure pairs each base at most "
                            "once"
                        )
                    seen[k] = pair
        if probabilities is not None:
            parsed = ParsedPrediction(parsed.structure, parse_probabilities(probabilities, n))
    except StructureFormatError as exc:
        raise UploadRejected(f"invalid {fmt} structure for a target of {n} nt: {exc}") from None
    return parsed


def prediction_for_upload(*, method: Method, target: Target, approved_only: bool = False) -> Prediction:
    """The prediction of ``target`` (created when missing) by the version its owner last saved (one awaiting
    staff approval included; only the approved, current one with ``approved_only``: the blind track),
    checked to take an upload.

    Raises
    ------
    UploadRejected
        The method takes no uploads, is inactive, the target is not one it runs on, or the prediction is
        final already (409).
    """
    version = method.current_version if approved_only else method.working_version
    kind = (version.spec.get("kind") or "command") if version is not None else "command"
    if kind != "web":
        raise UploadRejected(
            f"{method.name} is a {kind} method: CompaRNA runs it; only web-service methods take "
            "uploads",
            status=403,
        )
    if not method.active:
        raise UploadRejected(f"{method.name} is deactivated", status=409)
    spec = version.spec
    if (
        spec.get("comparative_input")
        and not target.comparative_inputs.filter(kind=spec["comparative_input"]).exists()
    ):
        raise UploadRejected(
            f"target {target.source_id} has no ({spec['comparative_input']}) homologue input"
        )
    prediction, _ = Prediction.objects.get_or_create(method_version=version, target=target)
    if prediction.status not in OPEN_STATES:
        raise UploadRejected(
            f"{method.name} already has a final outcome on {target.source_id} ({prediction.status}); "
            "predictions are never replaced — register a new version to predict again",
            status=409,
        )
    return prediction


def is_self_reported(*, target: Target, source: str = SERVICE_SOURCE) -> bool:
    """Whether a structure an owner controls — their upload, or their web service's answer (by callback,
    ``source`` :data:`SERVICE_SOURCE`, or synchronous) — for ``target`` now is self-reported: ``target`` is
    not blind before its week's release (its reference is, or will be, public when the structure can be
    checked against it), so the owner could have sent the reference itself (issues 26, 36)."""
    blind_now = Target.objects.filter(pk=target.pk, blind__week__release_at__gt=clock.now()).exists()
    return not blind_now


@transaction.atomic
def store_upload(*, prediction: Prediction, parsed: ParsedPrediction, source: str) -> Prediction:
    """Store an uploaded structure as the prediction's ``ok`` outcome and score it, in one transaction;
    an owner's upload for a target with a public reference is stored self-reported
    (:func:`is_self_reported`)."""
    locked = Prediction.objects.select_for_update().select_related("target").get(pk=prediction.pk)
    if locked.status not in OPEN_STATES:
        raise UploadRejected(f"the prediction already has a final outcome ({locked.status})", status=409)
    now = timezone.now()
    locked.status = Prediction.Status.OK
    locked.pairs = structure_to_text(parsed.structure)
    locked.probabilities = [list(p) for p in parsed.probabilities] if parsed.probabilities else None
    locked.uploaded = True
    locked.self_reported = is_self_reported(target=locked.target, source=source)
    locked.runner = f"upload ({source})"[:64]
    locked.error = ""
    locked.started_at = locked.started_at or now
    locked.finished_at = now
    if locked.started_at and locked.runtime_s is None:
        locked.runtime_s = (now - locked.started_at).total_seconds()
    locked.save()
    score_prediction(prediction=locked)
    return locked
