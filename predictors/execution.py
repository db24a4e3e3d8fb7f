"""Executing queued predictions: one target per launch, or a batch of one method version's targets.

Every queued prediction has its own message (``predictors.tasks.run_prediction_task``). The worker that
takes one locks it and, when its spec can batch (:attr:`PredictorSpec.batch`), also claims other queued
predictions of the same method version (``SKIP LOCKED``: never one another worker holds), as many as its
cost model says fit in :data:`settings.PREDICTION_BATCH_S` seconds (the runtimes measured so far of the
version, scaled by the declared complexity in the length). All of them become ``running`` under this
worker's token in the same transaction; they run in one sandbox launch
(:func:`predictors.core.batch.run_batch`) and each result is stored as soon as its launch ends. The
messages of the claimed predictions find them running (or final) and return at once.

At least once, never twice: a prediction is only ever run from ``queued``, or taken over from ``running``
when its worker is known dead — then the dead worker's other batch members are taken over with it. Targets
a batch did not start (its time budget ran out) go back to ``queued`` and are sent again; an exception
puts every unfinished member back to ``queued``.
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from comparna import pipeline
from comparna.rna.canonical import structure_to_text
from comparna.services.scoring import score_prediction
from predictors import webservices
from predictors.core.batch import BatchItem, can_batch, run_batch
from predictors.core.runners import RunResult, run_prediction, select_runner
from predictors.core.spec import COMPLEXITIES, PredictorSpec
from predictors.core.workspace import process_token, token_alive
from predictors.models import MethodVersion, Prediction
from predictors.uploads import is_self_reported

log = logging.getLogger(__name__)

#: Targets of a first batch of a version with no measured runtime yet (its runtimes calibrate the next). The
#: launch stops starting targets after ``PREDICTION_BATCH_S`` whatever they cost (the rest go back to the
#: queue), so a slow method's probe is bounded in time; a fast one's pays one launch for 16 targets, not 4.
PROBE_BATCH = 16
#: Recent ``ok`` runtimes of a version used to estimate its cost.
COST_SAMPLE = 50
#: What storing an outcome writes.
RESULT_FIELDS = [
    "status", "pairs", "probabilities", "runtime_s", "exit_code", "error", "stderr_tail", "runner", "limits",
    "awaiting_until", "finished_at",
]


class InfrastructureError(RuntimeError):
    """The runner itself failed (not the predictor): the task retries with backoff."""


def json_ready(value):
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    return value


def spec_from_version(version: MethodVersion) -> PredictorSpec:
    return PredictorSpec.from_dict(version.spec)


def worker_known_dead(token: str) -> bool:
    """True only when the process recorded as running a prediction is certainly gone (same host)."""
    return bool(token) and token_alive(token) is False


# ------------------------------------------------------------------------------------------- cost model
@dataclass(frozen=True)
class CostModel:
    """Estimated seconds of one target: ``scale * (length / 1000) ** exponent`` (None: not measured)."""

    exponent: int
    scale: float | None

    def seconds(self, length: int) -> float | None:
        return None if self.scale is None else self.scale * (length / 1000) ** self.exponent


def cost_model(version: MethodVersion, spec: PredictorSpec) -> CostModel:
    """The version's cost from its recent ``ok`` runtimes (median of runtime / (length/1000)^exponent)."""
    k = COMPLEXITIES[spec.complexity]
    rows = (
        Prediction.objects.filter(method_version=version, status=Prediction.Status.OK, runtime_s__gt=0)
        .order_by("-finished_at")
        .values_list("runtime_s", "target__length")[:COST_SAMPLE]
    )
    # The longer half of the sample: short targets' runtimes are mostly fixed costs, not the length's power.
    longer = sorted(rows, key=lambda r: r[1])[len(rows) // 2 :]
    ratios = [rt / (max(n, 1) / 1000) ** k for rt, n in longer]
    return CostModel(k, statistics.median(ratios) if ratios else None)


def claim_batch(prediction: Prediction, spec: PredictorSpec, *, dead_worker: str = "") -> list[Prediction]:
    """Other predictions of ``prediction``'s version to run in the same launch, locked (inside the caller's
    transaction): first those a dead worker was running with it, then queued ones in schedule order
    (predictors.scheduling: rank, then shortest first), while the estimated time stays within the budget:
    ``PREDICTION_BATCH_S``, and at most ``PREDICTION_BATCH_SHARE`` of the estimated time of the version's
    queued predictions (but not under ``PREDICTION_BATCH_MIN_S``), so that one worker does not take a whole
    method's backlog while the others wait."""
    version = prediction.method_version
    budget = float(settings.PREDICTION_BATCH_S)
    most = int(settings.PREDICTION_BATCH_MAX) - 1
    model = cost_model(version, spec)
    claimed: list[Prediction] = []
    if dead_worker:
        claimed = list(
            Prediction.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("target")
            .filter(method_version=version, status=Prediction.Status.RUNNING, worker=dead_worker)
            .exclude(pk=prediction.pk)[:most]
        )
    if model.scale is None:
        most = min(most, PROBE_BATCH - 1)
    else:
        # A share of what is left of this version, so that the other workers get their part of it too.
        lengths = Prediction.objects.filter(method_version=version, status=Prediction.Status.QUEUED)
        left = sum(model.seconds(n) or 0.0 for n in lengths.values_list("target__length", flat=True))
        share = left * float(settings.PREDICTION_BATCH_SHARE)
        budget = min(budget, max(float(settings.PREDICTION_BATCH_MIN_S), share))

    def cost(p: Prediction) -> float:
        if p.target.length > spec.max_length:
            return 0.0  # recorded as too long without running
        return model.seconds(p.target.length) or 0.0

    spent = cost(prediction) + sum(cost(p) for p in claimed)
    if len(claimed) >= most or spent >= budget:
        return claimed
    queued = (
        Prediction.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("target")
        .filter(method_version=version, status=Prediction.Status.QUEUED)
        .exclude(pk=prediction.pk)
        .order_by("schedule_rank", "target__length", "pk")[: most - len(claimed)]
    )
    for p in queued:
        c = cost(p)
        if spent + c > budget:
            break
        spent += c
        claimed.append(p)
    return claimed


# ------------------------------------------------------------------------------------------- execution
def execute_prediction(*, prediction_id: int) -> Prediction:
    """Run one queued prediction (with the batch it heads, see the module docstring); store exactly one
    final outcome for each.

    A prediction already in a final state is returned untouched, so a re-delivered task is harmless. A
    running one is left to its worker unless that worker is known dead (e.g. a pool child killed with
    SIGKILL, whose message the broker delivers again): then this call takes it over at once, with the
    other predictions the dead worker was running in the same batch.
    Raises InfrastructureError when the runner could not run the program at all (retried by the task).
    """
    with transaction.atomic():
        prediction = (
            Prediction.objects.select_for_update()
            .select_related("method_version", "target")
            .get(pk=prediction_id)
        )
        previous = prediction.worker
        taken_over = ""
        if not prediction.method_version.runnable:
            # Imported from a snapshot (e.g. an archived "queued" row re-sent by the sweep): never run.
            log.warning(
                "prediction %s: method version imported from a snapshot is not run",
                prediction.pk,
                extra=log_ids(prediction),
            )
            return prediction
        if prediction.status == Prediction.Status.QUEUED and not prediction.method_version.method.active:
            # Deactivated after it was sent: it stays queued (the sweep sends it again once reactivated).
            return prediction
        if prediction.status == Prediction.Status.RUNNING and worker_known_dead(previous):
            log.warning(
                "prediction %s: worker %s died while running it; taken over",
                prediction.pk,
                previous,
                extra=log_ids(prediction),
            )
            taken_over = previous
        elif prediction.status != Prediction.Status.QUEUED:
            # Final: a re-delivered message. Running: another worker has it, or it died with it on
            # another host, in which case the sweep (requeue_stuck_predictions) puts it back after its limit.
            return prediction
        spec = spec_from_version(prediction.method_version)
        delay = webservices.throttle_delay(prediction, spec)  # web services: the owner's limits
        if delay:
            webservices.defer(prediction, delay)
            return prediction
        runner = webservices.runner_for(prediction, spec) if spec.kind == "web" else select_runner(spec)
        batch = [prediction]
        if can_batch(spec, runner):
            batch += claim_batch(prediction, spec, dead_worker=taken_over)
        token = process_token()
        now = timezone.now()
        Prediction.objects.filter(pk__in=[p.pk for p in batch]).update(
            status=Prediction.Status.RUNNING, attempts=F("attempts") + 1, started_at=now, worker=token
        )
        prediction.refresh_from_db(fields=["status", "attempts", "started_at", "worker"])

    if len(batch) > 1:
        return _execute_batch(prediction, batch, spec, runner)
    try:
        alignment = None
        if spec.comparative_input:
            comparative = (
                prediction.target.comparative_inputs.filter(kind=spec.comparative_input)
                .order_by("-created_at")
                .first()
            )
            if comparative is None:
                raise InfrastructureError(f"{prediction.target} has no ({spec.comparative_input}) input")
            alignment = comparative.job_alignment()
        result = run_prediction(spec, prediction.target.sequence, alignment=alignment, runner=runner)
        if result.status == Prediction.Status.INFRASTRUCTURE_ERROR:
            raise InfrastructureError(result.message)
        return store_result(prediction=prediction, result=result)
    except BaseException as exc:
        # Not left "running" by a live worker: back to queued for the retry (or the sweep).
        _back_to_queue([prediction.pk], str(exc))
        raise


def log_ids(prediction: Prediction) -> dict:
    """The ids a log line about ``prediction`` carries (``extra=``; JSON keys in comparna/ops/logs.py)."""
    ids = {
        "prediction_id": prediction.pk,
        "target_id": prediction.target_id,
        "method_version_id": prediction.method_version_id,
    }
    if Prediction.method_version.is_cached(prediction):  # no query of its own for a log line
        ids["method_id"] = prediction.method_version.method_id
    return ids


def _back_to_queue(pks: list[int], error: str) -> int:
    return Prediction.objects.filter(pk__in=pks, status=Prediction.Status.RUNNING).update(
        status=Prediction.Status.QUEUED, error=error[-2000:], worker=""
    )


def _execute_batch(head: Prediction, batch: list[Prediction], spec: PredictorSpec, runner) -> Prediction:
    """Run ``batch`` (``head`` first) in as few launches as its targets allow; store each result."""
    stored: dict[int, Prediction] = {}
    infrastructure: list[str] = []

    def store(results: dict[int, RunResult]) -> None:
        for i, result in results.items():
            if result.status == Prediction.Status.INFRASTRUCTURE_ERROR:
                infrastructure.append(result.message)
                continue
            stored[batch[i].pk] = store_result(prediction=batch[i], result=result)

    try:
        outcome = run_batch(
            spec,
            [BatchItem(p.target.sequence) for p in batch],
            runner=runner,
            stop_after_s=float(settings.PREDICTION_BATCH_S),
            on_results=store,
        )
    except BaseException as exc:
        _back_to_queue([p.pk for p in batch if p.pk not in stored], str(exc))
        raise
    left = [batch[i].pk for i in outcome.unstarted]
    if left:
        # the time budget ran out: the rest goes back to the queue, with messages of its own
        with transaction.atomic():
            _back_to_queue(left, "")
            Prediction.objects.filter(pk__in=left).update(
                attempts=F("attempts") - 1, queued_at=timezone.now(), dispatched_at=timezone.now()
            )
            pipeline.predictions_queued(prediction_ids=left)
    if infrastructure:
        failed = [p.pk for p in batch if p.pk not in stored and p.pk not in left]
        _back_to_queue(failed, infrastructure[0])
        raise InfrastructureError(infrastructure[0])
    return stored.get(head.pk) or Prediction.objects.get(pk=head.pk)


@transaction.atomic
def store_result(*, prediction: Prediction, result: RunResult) -> Prediction:
    """Store the run's outcome and, for an ``ok`` run, its scores, in one transaction."""
    if Prediction.objects.select_for_update().filter(pk=prediction.pk, uploaded=True).exists():
        # the owner uploaded the structure while their service was being asked: the upload stands
        return Prediction.objects.get(pk=prediction.pk)
    prediction.status = result.status
    prediction.pairs = structure_to_text(result.structure) if result.structure is not None else ""
    prediction.probabilities = [list(p) for p in result.probabilities] if result.probabilities else None
    prediction.runtime_s = result.runtime_s
    prediction.exit_code = result.exit_code
    prediction.error = (result.message or "")[-4000:]
    prediction.stderr_tail = (result.stderr_tail or "")[-4000:]
    prediction.runner = result.runner
    prediction.limits = json_ready(result.limits or {})
    if result.status == Prediction.Status.AWAITING:
        # accepted by a web service: the structure comes by upload within the window (predictors.uploads)
        prediction.awaiting_until = webservices.awaiting_until(spec_from_version(prediction.method_version))
    else:
        prediction.finished_at = timezone.now()
    # Only the outcome: a batch member's other fields in memory predate its claim (attempts, worker).
    fields = RESULT_FIELDS
    if result.status == Prediction.Status.OK and spec_from_version(prediction.method_version).kind == "web":
        # a web service's answer for a target whose reference is public: self-reported (issue 36)
        prediction.self_reported = is_self_reported(target=prediction.target)
        fields = [*RESULT_FIELDS, "self_reported"]
    prediction.save(update_fields=fields)
    score_prediction(prediction=prediction)
    log.info(
        "prediction %s: %s in %.2f s",
        prediction.pk,
        prediction.status,
        prediction.runtime_s or 0.0,
        extra={**log_ids(prediction), "status": prediction.status, "runtime_s": prediction.runtime_s},
    )
    return prediction
