"""Test runs of predictor specs from the admin, executed by a worker and polled by the page.

The web request only stores a :class:`~predictors.models.TrialRun` and sends a task on the ``testrun``
queue; a worker runs the spec in the sandbox with a wall-clock limit of at most
``settings.TEST_RUN_TIME_LIMIT_S`` and stores a bounded result. So a test run that takes long (or
forever) never holds a web worker, and one user has at most one test run waiting at a time.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, IntegerField, Value, When
from django.utils import timezone

from comparna import pipeline
from comparna.models import Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import write_dot_bracket
from comparna.rna.metrics import count_pairs
from comparna.rna.structure import Structure, StructureFormatError
from predictors.core.runners import run_prediction
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import process_token
from predictors.models import TrialRun
from predictors.services import spec_to_json, worker_known_dead

#: Texts from the program shown on the page are cut to these lengths.
MESSAGE_CHARS = 1000
STDERR_CHARS = 2000
#: Targets offered as test targets: with a known reference, at most this long (a test run is short).
TEST_TARGET_MAX_LENGTH = 200
#: Not offered as test targets: the blind track's targets (their structures are not public before release).
HIDDEN_DATASETS = ("pdb-blind",)


class TrialBusy(Exception):
    """The user already has a test run waiting or running."""


def time_limit_s() -> float:
    return float(getattr(settings, "TEST_RUN_TIME_LIMIT_S", 60.0))


def expire_after_s() -> float:
    """A test run not finished after this long is shown as lost (no worker took it, or it died)."""
    return float(getattr(settings, "TEST_RUN_EXPIRE_S", 600.0))


def is_expired(trial: TrialRun) -> bool:
    return trial.status != TrialRun.Status.DONE and trial.created_at < timezone.now() - timedelta(
        seconds=expire_after_s()
    )


def request_test_run(*, spec, sequence: str, user) -> TrialRun:
    """Store a test run of ``spec`` on ``sequence`` and send it to the workers after the commit.

    Raises
    ------
    TrialBusy
        When ``user`` has a test run that is neither finished nor expired.
    """
    with transaction.atomic():
        pending = TrialRun.objects.select_for_update().filter(
            requested_by=user,
            status__in=[TrialRun.Status.QUEUED, TrialRun.Status.RUNNING],
            created_at__gte=timezone.now() - timedelta(seconds=expire_after_s()),
        )
        if user is not None and pending.exists():
            raise TrialBusy("your previous test run has not finished yet; wait for its result")
        trial = TrialRun.objects.create(requested_by=user, spec=spec_to_json(spec), sequence=sequence)
        pipeline.test_run_requested(trial_id=str(trial.pk))  # sent by task name after the commit
    return trial


def execute_test_run(*, trial_id: str) -> TrialRun:
    """Run a stored test run (what the worker does) and store its bounded result.

    A test run already finished is returned untouched; one marked running by a worker known dead is run
    again, one running elsewhere is left alone.
    """
    with transaction.atomic():
        trial = TrialRun.objects.select_for_update().get(pk=trial_id)
        if trial.status == TrialRun.Status.DONE or (
            trial.status == TrialRun.Status.RUNNING and not worker_known_dead(trial.worker)
        ):
            return trial
        trial.status = TrialRun.Status.RUNNING
        trial.started_at = timezone.now()
        trial.worker = process_token()
        trial.save(update_fields=["status", "started_at", "worker"])
    spec = PredictorSpec.from_dict(trial.spec)
    try:
        trial.result = outcome(spec, trial.sequence)
    except Exception as exc:  # noqa: BLE001 - a test run ends recorded, never left "running" (issue 26)
        message = f"the test run could not finish: {type(exc).__name__}: {exc}"
        trial.result = {
            "ok": False, "status": "error", "message": message[:MESSAGE_CHARS], "sequence": trial.sequence
        }
    if trial.result.get("pairs") is not None:
        trial.result["score"] = score_against_reference(trial.sequence, trial.result["pairs"])
    trial.status = TrialRun.Status.DONE
    trial.finished_at = timezone.now()
    trial.save(update_fields=["result", "status", "finished_at"])
    return trial


def outcome(spec, sequence: str, *, probabilities: int = 0) -> dict:
    """Run ``spec`` on ``sequence`` in the sandbox (limit capped); a dict for the admin page. With
    ``probabilities`` > 0, the most probable base pairs a probabilistic method gives (p ≥ 0.01, at most that
    many, as [i, j, p] in (i, j) order, p to 4 decimals) are kept too."""
    capped = replace(spec, time_limit_s=min(spec.time_limit_s, time_limit_s()))
    alignment = None
    if spec.comparative_input:
        alignment = stored_alignment(sequence, spec.comparative_input)
        if alignment is None:
            message = no_alignment_message(spec)
            return {"ok": False, "status": "error", "sequence": sequence, "message": message}
    try:
        result = run_prediction(capped, sequence, alignment=alignment)
    except ValueError as exc:
        return {"ok": False, "status": "error", "message": str(exc)[:MESSAGE_CHARS], "sequence": sequence}
    out = {
        "ok": result.ok,
        "status": result.status,
        "runner": result.runner,
        "runtime_s": result.runtime_s,
        "exit_code": result.exit_code,
        "message": result.message[:MESSAGE_CHARS],
        "stderr_tail": result.stderr_tail[-STDERR_CHARS:],
        "sequence": sequence,
        "limits": result.limits,
    }
    if result.structure is not None:
        out["n_pairs"] = len(result.structure.pairs)
        out["pairs"] = [list(p) for p in result.structure.sorted_pairs()]
        try:
            out["dot_bracket"] = write_dot_bracket(result.structure)
        except StructureFormatError:
            out["dot_bracket"] = None  # multiplets: shown as a pair list
    if result.probabilities:
        out["n_probabilities"] = len(result.probabilities)
        if probabilities > 0:
            likely = sorted((t for t in result.probabilities if t[2] >= 0.01), key=lambda t: -t[2])
            out["probabilities"] = sorted([int(i), int(j), round(float(p), 4)]
                                          for i, j, p in likely[:probabilities])
    return out


def reference_targets(limit: int = 30) -> list[Target]:
    """Targets a test run can be scored on: a known reference, at most :data:`TEST_TARGET_MAX_LENGTH` nt;
    tRNAs first (the classic first check of a folding method), then those with stored alignments (which
    comparative methods need), then by length. Each has ``n_alignments`` (stored comparative inputs)."""
    return list(
        Target.objects.filter(references__isnull=False, length__lte=TEST_TARGET_MAX_LENGTH)
        .exclude(dataset__slug__in=HIDDEN_DATASETS)
        .select_related("dataset")
        .distinct()
        .annotate(
            n_alignments=Count("comparative_inputs", distinct=True),
            trna=Case(
                When(rna_class__icontains="trna", then=Value(0)),
                When(rna_class__icontains="transfer", then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        .order_by("trna", "-n_alignments", "length", "dataset__slug", "source_id")[:limit]
    )


def score_against_reference(sequence: str, pairs: list) -> dict | None:
    """MCC, F1, sensitivity and PPV of a test run's predicted ``pairs`` against the reference of a stored
    target with exactly this ``sequence`` (every pair definition it has; SCIENCE.md §2), or None when no such
    target exists. The counts are those the benchmark stores for a real prediction."""
    target = (
        Target.objects.filter(sequence=sequence, references__isnull=False)
        .exclude(dataset__slug__in=HIDDEN_DATASETS)
        .select_related("dataset")
        .order_by("dataset__slug", "source_id")
        .first()
    )
    if target is None:
        return None
    try:
        predicted = Structure.from_pairs(len(sequence), [tuple(p) for p in pairs])
    except (StructureFormatError, TypeError, ValueError):
        return None
    out = {
        "target": {"pk": target.pk, "source_id": target.source_id, "dataset": target.dataset.name},
        "definitions": [],
    }
    for ref in target.references.order_by("definition"):
        reference = structure_from_text(target.length, ref.pairs)
        counts = count_pairs(reference, predicted)
        try:
            dot_bracket = write_dot_bracket(reference)
        except StructureFormatError:
            dot_bracket = None  # multiplets: no dot-bracket line
        out["definitions"].append(
            {
                "definition": ref.definition,
                "mcc": round(counts.mcc, 3),
                "f1": round(counts.f1, 3),
                "sensitivity": round(counts.sensitivity, 3),
                "ppv": round(counts.ppv, 3),
                "tp": counts.tp,
                "fp": counts.fp,
                "fn": counts.fn,
                "n_reference": len(reference.pairs),
                "reference_dot_bracket": dot_bracket,
            }
        )
    return out


def stored_alignment(sequence: str, kind: str) -> str | None:
    """The newest stored ``kind`` ("seed" or "20") alignment of a target with exactly this ``sequence``, its
    query row named ``query`` as comparative specs read it (what a real prediction of that target gets), or
    None when no such target has one."""
    target = (
        Target.objects.filter(sequence=sequence, comparative_inputs__kind=kind)
        .exclude(dataset__slug__in=HIDDEN_DATASETS)
        .order_by("dataset__slug", "source_id")
        .first()
    )
    if target is None:
        return None
    return target.comparative_inputs.filter(kind=kind).order_by("-created_at").first().job_alignment()


def no_alignment_message(spec: PredictorSpec) -> str:
    return (
        f"a comparative method reads the ({spec.comparative_input}) alignment stored with a benchmark "
        "target; this test sequence has none: choose a test target with alignments"
    )
