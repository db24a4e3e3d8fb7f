"""The advisor's services (issue 40): take a request, work it out in the background, show and expire it.

view → :func:`request_advice` (checks, limits, stores, sends after the commit) → task
:func:`work_out_query` (evidence, then the runs it chooses) → task :func:`execute_run` (one method in the
sandbox) → the page reads :func:`advice_page_data`. Requests live :data:`~comparna.advice.models.KEEP_DAYS`
days by the project clock (:mod:`comparna.clock`), then :func:`delete_expired_advice` removes them.

Privacy: a sequence is stored only in its request's rows, read only by its own page and runs; it never
becomes a target, a prediction or a score (so never a ranking or a snapshot), and no log line names it.
Only methods CompaRNA runs itself in its sandbox take part (no network there): never an owner's web
service, which would send the user's sequence to a third party.
"""

from __future__ import annotations

import logging
import math
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, DurationField, ExpressionWrapper, F, Q

from comparna import clock
from comparna.advice.inputs import QuerySequence, read_sequences
from comparna.advice.models import KEEP_DAYS, AdviceQuery, AdviceRequest, AdviceRun, Status
from comparna.owners import counters
from comparna.pipeline import Step, send_after_commit
from predictors.models import Method, MethodVersion

log = logging.getLogger(__name__)

WORK_OUT = Step("comparna.advice.tasks.work_out_query_task", queue="advice")
RUN_METHOD = Step("comparna.advice.tasks.run_advice_method_task", queue="advice")
#: Methods of the matching ranking run on each sequence, and the most a user may tick besides.
TOP_METHODS = 3
MAX_CHOSEN = 5


class AdviceRefused(Exception):
    """The request is not taken now (a limit); the message says why and when to try again."""


@dataclass(frozen=True)
class Limits:
    per_address: int
    per_address_window_s: int
    per_hour: int
    max_open_runs: int


def limits() -> Limits:
    return Limits(
        per_address=int(getattr(settings, "ADVICE_PER_ADDRESS", 10)),
        per_address_window_s=int(getattr(settings, "ADVICE_PER_ADDRESS_WINDOW_S", 3600)),
        per_hour=int(getattr(settings, "ADVICE_PER_HOUR", 300)),
        max_open_runs=int(getattr(settings, "ADVICE_MAX_OPEN_RUNS", 60)),
    )


def runnable_versions():
    """Current versions the advisor may run: approved, of active public single-sequence methods that
    CompaRNA runs in its own sandbox (a command or an image; never a web service)."""
    versions = MethodVersion.objects.public().filter(is_current=True, method__active=True)
    versions = versions.filter(method__input_kind=Method.InputKind.SINGLE).exclude(spec__kind="web")
    return versions.select_related("method")


def _open_runs() -> int:
    """Runs waiting or running, counting each sequence still waiting for its look-up as its top runs."""
    unfinished = [Status.QUEUED, Status.RUNNING]
    runs = AdviceRun.objects.filter(status__in=unfinished).count()
    return runs + TOP_METHODS * AdviceQuery.objects.filter(status__in=unfinished).count()


def busy_minutes(open_runs: int) -> int:
    """Minutes until the queued advisor runs should be done: their number times the mean run time of the
    last hour's runs (30 s before any), over the workers' concurrency (1: an upper bound)."""
    since = clock.now() - timedelta(hours=1)
    mean = (
        AdviceRun.objects.filter(status=Status.DONE, finished_at__gte=since, started_at__isnull=False)
        .annotate(took=ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField()))
        .aggregate(mean=Avg("took"))["mean"]
    )
    seconds = mean.total_seconds() if mean else 30.0
    return max(1, math.ceil(open_runs * seconds / 60))


def _check_limits(address: str) -> None:
    lim = limits()
    open_runs = _open_runs()
    if open_runs >= lim.max_open_runs:
        raise AdviceRefused(
            f"The advisor is busy ({open_runs} runs waiting); try again in about {busy_minutes(open_runs)} "
            "minutes."
        )
    hour = counters.count_attempt(key=counters.attempt_key("advice-all", "hour"), window_s=3600)
    if hour > lim.per_hour:
        raise AdviceRefused("The advisor has taken its hourly share of requests; try again within the hour.")
    mine = counters.count_attempt(key=counters.attempt_key("advice-addr", address or ""),
                                  window_s=lim.per_address_window_s)
    if mine > lim.per_address:
        minutes = max(1, lim.per_address_window_s // 60)
        raise AdviceRefused(
            f"At most {lim.per_address} requests per {minutes} minutes from one address; try again later."
        )


def request_advice(*, text: str, chosen: list[int] | None = None, address: str = "") -> AdviceRequest:
    """Check a paste (:func:`comparna.advice.inputs.read_sequences`), the chosen methods and the limits,
    store the request and send each sequence to the workers once the transaction commits.

    Raises
    ------
    comparna.advice.inputs.AdviceInputError
        The input is refused (nothing is counted or stored).
    AdviceRefused
        A limit is reached (nothing is stored).
    """
    sequences: list[QuerySequence] = read_sequences(text)
    chosen = sorted({int(pk) for pk in chosen or []})
    if len(chosen) > MAX_CHOSEN:
        raise AdviceRefused(f"Tick at most {MAX_CHOSEN} methods.")
    known = set(runnable_versions().filter(method_id__in=chosen).values_list("method_id", flat=True))
    if unknown := [pk for pk in chosen if pk not in known]:
        raise AdviceRefused(f"Method {unknown[0]} cannot be run by the advisor.")
    _check_limits(address)
    now = clock.now()
    with transaction.atomic():
        request = AdviceRequest.objects.create(
            token=secrets.token_urlsafe(24), created_at=now, expires_at=now + timedelta(days=KEEP_DAYS),
            chosen=chosen,
        )
        queries = AdviceQuery.objects.bulk_create(
            AdviceQuery(request=request, position=k, name=s.name, sequence=s.sequence)
            for k, s in enumerate(sequences)
        )
        send_after_commit(WORK_OUT, [(q.pk,) for q in queries])
    log.info("advice request %s stored: %d sequences", request.pk, len(queries))
    return request


def live_request(token: str) -> AdviceRequest | None:
    """The request behind ``token`` while it has not expired (by the project clock), else None."""
    return AdviceRequest.objects.filter(token=token, expires_at__gt=clock.now()).first()


def choose_runs(query: AdviceQuery) -> list[AdviceRun]:
    """The runs of a query: the top :data:`TOP_METHODS` runnable methods of its matching ranking (the
    largest matching slice with a runnable method, in the ranking's own order: its ranked methods first,
    then those not ranked yet), then the user's ticked methods.

    A family subset holds one family, so its floor makes every verdict "?" and no method "ranked": its order
    is then the mean MCC's, and the page says that the top ones are not separable. Taking only ranked
    methods ran nothing for a tRNA in ``make run`` (found measuring issue 40)."""
    versions = {v.method_id: v for v in runnable_versions()}
    length = len(query.sequence)
    fits = {pk: v for pk, v in versions.items() if int(v.spec.get("max_length") or 10**6) >= length}
    by_name = {v.method.name: pk for pk, v in fits.items()}
    slices = sorted(query.evidence.get("slices") or [], key=lambda s: -s["targets"])
    top: list[int] = []
    for slice_ in slices:
        rows = slice_["rows"]
        ordered = [r for r in rows if r.get("ranked", True)] + [r for r in rows if not r.get("ranked", True)]
        for row in ordered:
            pk = by_name.get(row.get("method"))
            if pk is not None and pk not in top:
                top.append(pk)
            if len(top) == TOP_METHODS:
                break
        if top:
            break
    runs = [AdviceRun(query=query, method_id=pk, version=fits[pk], role=AdviceRun.Role.TOP, order=k)
            for k, pk in enumerate(top)]
    for pk in query.request.chosen:
        if pk in fits and pk not in top:
            runs.append(AdviceRun(query=query, method_id=pk, version=fits[pk], role=AdviceRun.Role.CHOSEN,
                                  order=len(runs)))
    return runs


def work_out_query(*, query_id: int) -> AdviceQuery | None:
    """A worker's part for one sequence: its evidence, then its runs sent (idempotent: a query already
    worked out is left alone; a request deleted meanwhile is nothing to do)."""
    from comparna.advice.evidence import build_evidence

    query = AdviceQuery.objects.select_related("request").filter(pk=query_id).first()
    if query is None or query.status in (Status.DONE, Status.FAILED):
        return query
    AdviceQuery.objects.filter(pk=query.pk).update(status=Status.RUNNING)
    AdviceRequest.objects.filter(pk=query.request_id, status=Status.QUEUED).update(status=Status.RUNNING)
    try:
        query.evidence = build_evidence(query.sequence)
        query.status = Status.DONE
    except Exception as exc:  # noqa: BLE001 - recorded on the page, never left "running"
        log.exception("advice query %s: evidence failed", query.pk)
        query.status, query.error = Status.FAILED, f"{type(exc).__name__}: {exc}"[:500]
    with transaction.atomic():
        query.save(update_fields=["evidence", "status", "error"])
        runs = AdviceRun.objects.bulk_create(choose_runs(query)) if query.status == Status.DONE else []
        send_after_commit(RUN_METHOD, [(run.pk,) for run in runs])
    _finish_if_done(query.request_id)
    return query


def execute_run(*, run_id: int) -> AdviceRun | None:
    """Run one method on one sequence in the sandbox (the test runs' path, :func:`predictors.trials.outcome`,
    capped at ``TEST_RUN_TIME_LIMIT_S``) and store its bounded result."""
    from predictors.core.spec import PredictorSpec
    from predictors.trials import outcome

    with transaction.atomic():
        runs = AdviceRun.objects.select_for_update().select_related("query", "version")
        run = runs.filter(pk=run_id).first()
        if run is None or run.status in (Status.DONE, Status.FAILED):
            return run
        run.status, run.started_at = Status.RUNNING, clock.now()
        run.save(update_fields=["status", "started_at"])
    try:
        result = outcome(PredictorSpec.from_dict(run.version.spec), run.query.sequence,
                         probabilities=KEEP_PROBABILITIES)
        run.status = Status.DONE if result.get("ok") else Status.FAILED
    except Exception as exc:  # noqa: BLE001 - recorded on the page, never left "running"
        log.exception("advice run %s failed", run.pk)
        result = {"ok": False, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
        run.status = Status.FAILED
    result.pop("sequence", None)  # stored once, on the query
    run.result, run.finished_at = result, clock.now()
    run.save(update_fields=["result", "status", "finished_at"])
    _finish_if_done(run.query.request_id)
    return run


def _finish_if_done(request_id: int) -> None:
    unfinished = [Status.QUEUED, Status.RUNNING]
    open_queries = AdviceQuery.objects.filter(request_id=request_id, status__in=unfinished)
    open_runs = AdviceRun.objects.filter(query__request_id=request_id, status__in=unfinished)
    if not open_queries.exists() and not open_runs.exists():
        AdviceRequest.objects.filter(pk=request_id).exclude(status=Status.DONE).update(
            status=Status.DONE, finished_at=clock.now()
        )


#: Base-pair probabilities kept of a probabilistic method's run (the most probable, p ≥ 0.01): shown as
#: each nucleotide's pairing probability and in the JSON download.
KEEP_PROBABILITIES = 5000
#: A run "running" this long after it started (its task's hard limit is 12 minutes) or a sequence or run
#: still waiting this long after the request is left by a worker that stopped: the sweep records it as failed.
STUCK_RUNNING = timedelta(minutes=20)
STUCK_WAITING = timedelta(hours=3)


def sweep_stuck_advice() -> dict:
    """Periodic: record as failed what no worker will finish (a worker killed after the broker dropped the
    task, a lost message), so that no page says "running" forever; returns the counts swept."""
    now = clock.now()
    unfinished = [Status.QUEUED, Status.RUNNING]
    old = now - STUCK_WAITING
    stuck_runs = AdviceRun.objects.filter(
        (Q(status=Status.RUNNING) & Q(started_at__lt=now - STUCK_RUNNING))
        | (Q(status__in=unfinished) & Q(query__request__created_at__lt=old))
    )
    stuck_queries = AdviceQuery.objects.filter(status__in=unfinished, request__created_at__lt=old)
    requests = set(stuck_runs.values_list("query__request_id", flat=True))
    requests |= set(stuck_queries.values_list("request_id", flat=True))
    message = "not finished: the worker running it stopped (try again)"
    runs = AdviceRun.objects.filter(pk__in=list(stuck_runs.values_list("pk", flat=True))).update(
        status=Status.FAILED, finished_at=now, result={"ok": False, "status": "error", "message": message}
    )
    queries = stuck_queries.update(status=Status.FAILED, error=message)
    for request_id in requests:
        _finish_if_done(request_id)
    return {"runs": runs, "queries": queries}


def delete_expired_advice() -> int:
    """Delete every request past its expiry (with its sequences and runs); returns how many requests."""
    expired = AdviceRequest.objects.filter(expires_at__lte=clock.now())
    count = expired.count()
    expired.delete()
    return count
