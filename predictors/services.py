"""Predictor services: catalogue sync, queueing, and the sweep (execution: :mod:`predictors.execution`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Max, Min, Q, When
from django.utils import timezone

from comparna import pipeline
from comparna.models import Target
from predictors.execution import (  # noqa: F401 - execution names re-exported for existing callers
    InfrastructureError,
    execute_prediction,
    json_ready,
    spec_from_version,
    store_result,
    worker_known_dead,
)
from predictors.models import Method, MethodVersion, Prediction
from predictors.priorities import tiered_schedule_ranks
from predictors.scheduling import (
    DISPATCH_ORDER,
    LANES,
    Candidate,
    Lane,
    MethodCost,
    lane_window,
)

log = logging.getLogger(__name__)

# Outcomes that end a prediction; everything else is still queued/running.
FINAL_STATES = {
    Prediction.Status.OK,
    Prediction.Status.FAILED,
    Prediction.Status.TIMEOUT,
    Prediction.Status.TOO_LONG,
    Prediction.Status.UNPARSABLE,
}


def spec_to_json(spec) -> dict:
    return json_ready(spec.as_dict())


@transaction.atomic
def register_spec(
    *,
    spec,
    from_catalogue: bool = True,
    active: bool | None = None,
    approved: bool = True,
    method: Method | None = None,
) -> MethodVersion:
    """Create or update the method of ``spec``; a changed fingerprint makes a new current version.

    ``approved`` (the catalogue, staff in the admin, staff approving an owner's version) marks the version
    approved (:attr:`MethodVersion.approved_at`); an owner registering their development method passes
    False: nothing of it is public until staff make it public (:mod:`predictors.publication`).

    ``method``: the method to update (an owner's development method is always passed so). Without it the
    method is the public or ownerless one of that name (names are unique among each of those; an owner's
    development method may share the name and is never taken for it, issue 36), or a new one.
    """
    if method is None:
        method = (
            Method.objects.filter(name=spec.name)
            .filter(Q(visibility=Method.Visibility.PUBLIC) | Q(owner__isnull=True))
            .order_by(Case(When(visibility=Method.Visibility.PUBLIC, then=0), default=1), "pk")
            .first()
        ) or Method.objects.create(name=spec.name)
    elif method.name != spec.name:
        raise ValueError(f"spec {spec.name!r} is not method {method.name!r}")
    method.description = spec.description
    method.citation = spec.citation
    method.url = spec.url
    method.input_kind = spec.input_kind
    method.pseudoknots = spec.pseudoknots
    method.from_catalogue = from_catalogue
    if active is not None:
        method.active = active
    method.save()
    fingerprint = spec.fingerprint()
    version = method.versions.filter(fingerprint=fingerprint).first()
    if version is None or not version.is_current:
        method.versions.filter(is_current=True).update(is_current=False)
        if version is None:
            version = MethodVersion.objects.create(
                method=method,
                version=spec.version,
                program=spec.program,
                spec=spec_to_json(spec),
                fingerprint=fingerprint,
                is_current=True,
            )
        else:
            version.is_current = True
            version.save(update_fields=["is_current"])
    if version.spec != spec_to_json(spec) or not version.runnable:
        # Same fingerprint, other limits or texts: the runner reads the spec from this row, so a changed
        # time/memory/length limit must reach it (predictions stay comparable: the method is unchanged).
        # Registering (catalogue sync, or the admin after a successful test run) is what makes a version
        # imported from a snapshot runnable.
        version.spec = spec_to_json(spec)
        version.runnable = True
        version.save(update_fields=["spec", "runnable"])
    if approved and version.approved_at is None:
        version.approved_at = timezone.now()
        version.save(update_fields=["approved_at"])
    return version


def sync_predictors(
    *, specs: Iterable | None = None, only: Iterable[str] | None = None
) -> list[MethodVersion]:
    """Sync the declared catalogue to the database; catalogue methods no longer declared are deactivated.

    ``only`` keeps just the named catalogue entries active (a deployment that runs a subset).
    """
    from predictors.catalogue import load_catalogue  # probes the installed programs when first imported

    specs = list(load_catalogue() if specs is None else specs)
    if only is not None:
        only = set(only)
        unknown = only - {s.name for s in specs}
        if unknown:
            raise ValueError(f"not in the catalogue: {', '.join(sorted(unknown))}")
        specs = [s for s in specs if s.name in only]
    versions = [register_spec(spec=spec, from_catalogue=True, active=True) for spec in specs]
    names = {s.name for s in specs}
    Method.objects.filter(from_catalogue=True).exclude(name__in=names).update(active=False)
    return versions


def queue_predictions(
    *, versions: Iterable[MethodVersion] | None = None, targets: Iterable[Target] | None = None
) -> int:
    """Create a prediction for each (current version, target) pair not yet run, and send them in order.

    A target longer than the version's length limit is recorded ``too long`` at once (never queued). The
    others are queued with their schedule rank (:mod:`predictors.scheduling`) and sent through the window
    (:func:`dispatch_predictions`). Unique constraints make this idempotent; tasks are sent only after the
    transaction commits. Returns how many predictions were created (queued or too long).
    """
    if versions is None:
        versions = MethodVersion.objects.to_run()
    # Versions imported from a snapshot are never run (their spec came from an archive, not a registration).
    versions = [v for v in versions if v.runnable]
    rows = Target.objects.all() if targets is None else Target.objects.filter(pk__in=[t.pk for t in targets])
    info = {pk: (ds, length) for pk, ds, length in rows.values_list("pk", "dataset_id", "length")}
    target_ids = list(info)
    # Reads first, outside the transaction: with SQLite a transaction holds the write lock from its start
    # (settings), and nothing created here can be lost to a concurrent queueing (unique pairs, ignored
    # conflicts). Only the inserts and the dispatch are one transaction.
    wanted: dict[MethodVersion, list[int]] = {}
    for version in versions:
        kind = version.spec.get("comparative_input")
        eligible = target_ids
        if kind:
            # Comparative methods run only where the target has that homologue input (SCIENCE.md §4).
            eligible = set(
                Target.objects.filter(pk__in=target_ids, comparative_inputs__kind=kind).values_list(
                    "pk", flat=True
                )
            )
        existing = set(
            Prediction.objects.filter(method_version=version, target_id__in=target_ids).values_list(
                "target_id", flat=True
            )
        )
        wanted[version] = [t for t in target_ids if t in eligible and t not in existing]
    ranks = schedule_ranks(wanted, info)
    now = timezone.now()
    created = 0
    with transaction.atomic():
        for version, ids in wanted.items():
            limit = int(version.spec.get("max_length") or 0)
            new = [new_prediction(version, t, info[t][1], limit, ranks.get(t, 0), now) for t in ids]
            Prediction.objects.bulk_create(new, batch_size=500, ignore_conflicts=True)
            created += len(new)
        dispatch_predictions()
    return created


def new_prediction(
    version: MethodVersion, target_id: int, length: int, limit: int, rank: int, now
) -> Prediction:
    """A queued prediction, or one recorded ``too long`` at once when the target exceeds the length limit
    (the runner would not run it either: same outcome, same message, no job)."""
    if limit and length > limit:
        return Prediction(
            method_version=version,
            target_id=target_id,
            status=Prediction.Status.TOO_LONG,
            error=f"sequence length {length} exceeds the limit of {limit}",
            limits={"max_length": limit},
            queued_at=now,
            finished_at=now,
            schedule_rank=rank,
        )
    return Prediction(method_version=version, target_id=target_id, schedule_rank=rank, queued_at=now)


def schedule_ranks(
    wanted: dict[MethodVersion, list[int]], info: dict[int, tuple[int, int]]
) -> dict[int, int]:
    """The schedule rank of every target in ``wanted`` (``info``: target -> (dataset, length)): a target
    already queued for another method keeps its rank (a late method catches up there first); new targets
    are ranked from the front of the queue, the lowest rank not yet sent, so their dataset takes turns with
    the backlog already queued (:func:`predictors.scheduling.assign_ranks`)."""
    needed = sorted({t for ids in wanted.values() for t in ids})
    if not needed:
        return {}
    existing: dict[int, int] = {}
    for k in range(0, len(needed), 2000):
        existing.update(
            Prediction.objects.filter(target_id__in=needed[k : k + 2000])
            .values("target_id")
            .annotate(rank=Min("schedule_rank"))
            .values_list("target_id", "rank")
        )
    methods = [MethodCost.from_spec(v.spec) for v in wanted]
    candidates = [Candidate(t, info[t][0] or 0, info[t][1]) for t in needed]
    # datasets declaring a priority (the PDB-derived sets, issue 38) wait for the first benchmarks' lead
    return tiered_schedule_ranks(candidates, methods, existing=existing, next_rank=queue_front())


def queue_front() -> int:
    """The lowest schedule rank of a queued prediction not yet sent (never below 0: the blind track's
    priority rank is its own), or the rank after every existing one when nothing waits."""
    waiting = Prediction.objects.filter(
        status=Prediction.Status.QUEUED, dispatched_at__isnull=True, schedule_rank__gte=0
    )  # the index prediction_dispatch (status, dispatched_at, schedule_rank) answers this at its first entry
    front = waiting.aggregate(front=Min("schedule_rank"))["front"]
    if front is not None:
        return front
    top = Prediction.objects.aggregate(top=Max("schedule_rank"))["top"]
    return 0 if top is None else max(top + 1, 0)


def lane_filter(lane: Lane) -> Q:
    """The predictions of ``lane`` (:data:`predictors.scheduling.LANES`): development methods' (an owner's
    private method, or a version awaiting approval) or public methods'."""
    development = Q(method_version__pending_review=True) | ~Q(
        method_version__method__visibility=Method.Visibility.PUBLIC
    )
    return development if lane.name == "development" else ~development


def send_predictions(ids: list[int], lane: Lane) -> None:
    """Hand ``ids`` to the broker on ``lane``'s queue (after the transaction commits)."""
    if not ids:
        return
    if lane.queue == pipeline.RUN_PREDICTION.queue:
        pipeline.predictions_queued(prediction_ids=ids)
    else:
        pipeline.predictions_queued(prediction_ids=ids, queue=lane.queue)


def dispatch_predictions(*, window: int | None = None) -> int:
    """Send the next queued predictions of every lane (:data:`predictors.scheduling.LANES`), in schedule
    order, so that at most its part of ``window`` (setting ``PREDICTION_DISPATCH_WINDOW``) of each lane are
    sent and not yet started; returns how many were sent.

    A lane is topped up only when a quarter of its window is free (fewer, larger top-ups). When more wait
    than were sent, a dispatch message goes in the middle of what was sent: workers reach it while half of
    the window is still queued, and top it up (the beat schedule sends one every minute in case it was lost).
    """
    window = settings.PREDICTION_DISPATCH_WINDOW if window is None else window
    now = timezone.now()
    sent = 0
    with transaction.atomic():
        recent = now - timedelta(seconds=settings.PREDICTION_DISPATCH_STALE_S)
        queued = Prediction.objects.filter(status=Prediction.Status.QUEUED)
        for lane in LANES:
            mine = queued.filter(lane_filter(lane))
            size = lane_window(lane, window)
            room = size - mine.filter(dispatched_at__gte=recent).count()
            if room < max(1, size // 4):
                continue
            pending = mine.filter(
                dispatched_at__isnull=True, method_version__runnable=True, method_version__method__active=True
            ).order_by(*DISPATCH_ORDER)
            ids = list(pending.values_list("pk", flat=True)[: room + 1])
            more = len(ids) > room
            ids = ids[:room]
            for k in range(0, len(ids), 2000):
                Prediction.objects.filter(pk__in=ids[k : k + 2000]).update(dispatched_at=now)
            half = len(ids) // 2 if more else len(ids)
            send_predictions(ids[:half], lane)
            if more:
                pipeline.dispatch_due()
            send_predictions(ids[half:], lane)
            sent += len(ids)
    return sent


def queue_predictions_on(*, target_ids: list[int], comparative_only: bool = False) -> int:
    """Queue every current version of active methods, and any version awaiting approval (or only the
    comparative ones), on these targets."""
    versions = MethodVersion.objects.to_run()
    if comparative_only:
        versions = versions.exclude(method__input_kind=Method.InputKind.SINGLE)
    return queue_predictions(versions=versions, targets=Target.objects.filter(pk__in=target_ids))


def queue_unpredicted_targets(*, limit: int = 2000) -> int:
    """Queue every current method on targets that have no prediction at all (their pipeline message was lost).

    Returns how many predictions were created.
    """
    unpredicted = Target.objects.filter(predictions__isnull=True).order_by("pk")
    ids = list(unpredicted.values_list("pk", flat=True)[:limit])
    return queue_predictions_on(target_ids=ids) if ids else 0


def requeue_stuck_predictions(*, grace_s: float = 300, lost_after_s: float | None = None) -> dict[str, int]:
    """Re-queue predictions whose worker died or whose message was lost.

    A running prediction is stuck when its worker is known dead (same host) or, when that cannot be
    told (another host or container), when it has been running past its time limit + ``grace_s``.

    Queued predictions older than ``lost_after_s`` are sent again (e.g. the broker lost its queue on a
    restart). Duplicated messages are harmless: only a ``queued`` prediction is ever run.
    """
    now = timezone.now()
    lost_after_s = settings.PREDICTION_RESEND_AFTER_S if lost_after_s is None else lost_after_s
    stuck = []
    running = Prediction.objects.filter(status=Prediction.Status.RUNNING).select_related("method_version")
    for p in running:
        limit = float(p.method_version.spec.get("time_limit_s", 3600))
        if p.method_version.spec.get("batch"):
            # a batch member may wait for the batch's earlier targets (no target starts after the budget)
            limit += float(settings.PREDICTION_BATCH_S)
        if worker_known_dead(p.worker):
            stuck.append(p.pk)  # its worker is gone: no need to wait for the limit
        elif p.started_at is None or p.started_at < now - timedelta(seconds=limit + grace_s):
            stuck.append(p.pk)
    with transaction.atomic():
        n_stuck = Prediction.objects.filter(pk__in=stuck, status=Prediction.Status.RUNNING).update(
            status=Prediction.Status.QUEUED, queued_at=now, error="re-queued: worker lost while running",
            worker="",
        )
        # sent that long ago and still queued: the message was lost (those never sent wait for the window)
        lost = list(
            Prediction.objects.filter(
                status=Prediction.Status.QUEUED,
                dispatched_at__lt=now - timedelta(seconds=lost_after_s),
                method_version__runnable=True,
                method_version__method__active=True,
            ).values_list("pk", flat=True)
        )
        resend = sorted(set(stuck) | set(lost))
        Prediction.objects.filter(pk__in=resend).update(dispatched_at=now)
        for lane in LANES:  # each on its lane's queue
            ids = list(
                Prediction.objects.filter(lane_filter(lane), pk__in=resend).values_list("pk", flat=True)
            )
            if ids:
                send_predictions(sorted(ids), lane)
    dispatch_predictions()
    return {"stuck": n_stuck, "resent": len(resend)}
