"""Counting the predictions in the background, so that no page counts them (issue 28).

Every page shows progress (predictions per method and state, throughput, ETA) and every ranking page whether
its snapshot is settled; computed from the predictions table in a request, those grow with all the data (at
116 k predictions the home page took 5.8 s whenever its 30-s cache had expired). Instead
:func:`refresh_tallies` (the periodic task ``comparna.tasks.refresh_tallies_task``, every
``COMPARNA_TALLY_INTERVAL_S``) counts once per dataset and per subset, by method version, state and
self-reported flag, with the throughput window's finished counts, into :class:`comparna.tallies.models`
(a few thousand rows), counts the targets per dataset and subset, and checks in the background whether each
newest ranking snapshot's inputs are still current. The pages read those rows:
:func:`progress_counts_by_dataset`, :func:`subset_status_counts`, :func:`inputs_current`,
:func:`target_counts`, :func:`version_tallies` (a method's page).

Until the first refresh has run (a fresh install, the tests) the readers answer None and the caller counts
live, as before.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time

from django.db import transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Subset, Target
from comparna.services import backlog
from comparna.services.rankings import build_counts_table, inputs_hash
from comparna.tallies.models import PredictionTally, RankingFreshness, ScheduledEta, TallyRun
from predictors.models import Method, Prediction

#: The throughput window (minutes) the refresh counts finished predictions in (progress.WINDOW_MINUTES).
WINDOW_MINUTES = 15
UNFINISHED = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)
#: The runner of a structure a method's web service sent back for a job CompaRNA sent it (an upload that is
#: not blind: :data:`comparna.services.pages.methods.ORIGINS`).
SERVICE_UPLOAD = "upload (callback)"
#: A freshness check older than this is redone even when the subset's tallies did not change (re-scoring).
RECHECK = dt.timedelta(minutes=10)


def _scoped(values: tuple[str, ...], recent: Q):
    return (
        Prediction.objects.values(*values, "method_version_id", "status", "self_reported")
        .annotate(n=Count("id"), recent=Count("id", filter=recent), first=Min("started_at", filter=recent),
                  blind=Count("id", filter=Q(uploaded=True) & ~Q(runner=SERVICE_UPLOAD)))
        .order_by()
    )


def refresh_tallies(*, window_minutes: float = WINDOW_MINUTES, now: dt.datetime | None = None) -> TallyRun:
    """Count every prediction per dataset and per subset (by version, state, self-reported; with the
    window's finished ones), replace the previous run's rows, then check the newest snapshots' inputs."""
    started = time.perf_counter()
    now = now or timezone.now()
    since = now - dt.timedelta(minutes=window_minutes)
    # "too long" is recorded without running anything (often at queue time): not throughput
    recent = Q(finished_at__gte=since, finished_at__lte=now) & ~Q(
        status__in=(*UNFINISHED, Prediction.Status.TOO_LONG)
    )
    rows = []
    for row in _scoped(("target__dataset_id",), recent):
        rows.append((row["target__dataset_id"], None, row))
    subset_dataset = dict(Subset.objects.values_list("pk", "dataset_id"))
    for row in _scoped(("target__subsets",), recent):  # one join: a target in no subset gives None
        if row["target__subsets"] is not None:
            rows.append((subset_dataset[row["target__subsets"]], row["target__subsets"], row))
    # the pages' target counts too (a count of every target row, like the predictions')
    members = Subset.targets.through.objects
    # a target's family is known once cmscan ran on it (found or not) or its dataset declares it; comparative
    # methods run on a target once it has homologue inputs (issue 37: pages say what is still pending)
    assigned = Q(target__family_assignments__isnull=False) | Q(target__family_source="dataset")
    targets = {
        "datasets": {str(pk): n for pk, n in Target.objects.values("dataset_id").annotate(n=Count("id"))
                     .order_by().values_list("dataset_id", "n")},
        "subsets": {str(pk): n for pk, n in members.values("subset_id").annotate(n=Count("id"))
                    .order_by().values_list("subset_id", "n")},
        "families_assigned": {
            str(pk): n for pk, n in members.filter(assigned).values("subset_id")
            .annotate(n=Count("target_id", distinct=True)).order_by().values_list("subset_id", "n")
        },
        "comparative_inputs": Target.objects.filter(comparative_inputs__isnull=False).distinct().count(),
    }
    # the ETA of every scope from the workers' schedule, measured over the same window
    first = min((r["first"] for ds, sub, r in rows if sub is None and r["first"] and not r["self_reported"]),
                default=None)
    span = backlog.measuring_minutes(first, now=now, window_minutes=window_minutes)
    schedule = backlog.measure_schedule(now=now, since=since, span_minutes=span)
    etas = backlog.scope_etas(schedule)
    with transaction.atomic():
        run = TallyRun.objects.create(computed_at=now, window_minutes=window_minutes, targets=targets,
                                      throughput=schedule.throughput)
        ScheduledEta.objects.bulk_create(
            [ScheduledEta(run=run, scope=e["scope"], dataset_id=e["dataset"], subset_id=e["subset"],
                          method_version_id=e["version"], minutes=e["minutes"], unmeasured=e["unmeasured"])
             for e in etas],
            batch_size=5000,
        )
        PredictionTally.objects.bulk_create(
            [
                PredictionTally(
                    run=run, dataset_id=ds, subset_id=sub, method_version_id=r["method_version_id"],
                    status=r["status"], self_reported=r["self_reported"], n=r["n"], recent=r["recent"],
                    first_started=r["first"], blind=r["blind"],
                )
                for ds, sub, r in rows
            ],
            batch_size=5000,
        )
        TallyRun.objects.exclude(pk=run.pk).delete()
    check_freshness(run=run)
    TallyRun.objects.filter(pk=run.pk).update(seconds=time.perf_counter() - started)
    run.refresh_from_db()
    return run


def current_run() -> TallyRun | None:
    """The newest refresh, or None before the first one."""
    return TallyRun.objects.order_by("-computed_at").first()


def target_counts() -> dict[str, dict[int, int]] | None:
    """``{"datasets": {pk: targets}, "subsets": {pk: targets}}`` as last counted; None before the first
    refresh (the caller counts)."""
    counted = TallyRun.objects.order_by("-computed_at").values_list("targets", flat=True).first()
    if not counted:  # no refresh yet, or one from before the targets were counted
        return None
    scopes = ("datasets", "subsets")
    return {scope: {int(pk): n for pk, n in counted.get(scope, {}).items()} for scope in scopes}


def families_assigned(*, subset: Subset) -> tuple[int, int]:
    """``(targets of ``subset`` with a known family, targets)``: as last counted, counted here before the
    first refresh (or one from before they were counted)."""
    counted = TallyRun.objects.order_by("-computed_at").values_list("targets", flat=True).first() or {}
    if "families_assigned" in counted:
        key = str(subset.pk)
        return counted["families_assigned"].get(key, 0), counted.get("subsets", {}).get(key, 0)
    members = Subset.targets.through.objects.filter(subset=subset)
    assigned = Q(target__family_assignments__isnull=False) | Q(target__family_source="dataset")
    return members.filter(assigned).values("target_id").distinct().count(), members.count()


def comparative_input_targets() -> tuple[int, int]:
    """``(targets with homologue inputs for comparative methods, targets)``, as last counted (or counted)."""
    counted = TallyRun.objects.order_by("-computed_at").values_list("targets", flat=True).first() or {}
    if "comparative_inputs" in counted:
        return counted["comparative_inputs"], sum(counted.get("datasets", {}).values())
    return Target.objects.filter(comparative_inputs__isnull=False).distinct().count(), Target.objects.count()


def _methods() -> dict[int, tuple[str, int, bool, bool]]:
    """method version pk -> (method name, method pk, active, public): ``public`` by the one rule
    (:func:`comparna.models.public_version_q`: an approved version of a public method, issue 36)."""
    from predictors.models import MethodVersion

    public = set(MethodVersion.objects.public().values_list("pk", flat=True))
    return {
        pk: (name, mpk, active, pk in public)
        for pk, name, mpk, active in MethodVersion.objects.values_list(
            "pk", "method__name", "method_id", "method__active"
        )
    }


def progress_counts_by_dataset(
    *, subset: Subset | None = None, dataset: Dataset | None = None, include_private: bool = False
) -> tuple[dict[int, tuple[dict, dict]], TallyRun] | None:
    """What :func:`comparna.services.progress.prediction_progress` counts, from the tallies, by dataset in one
    query: ``({dataset pk: (by_method {(name, method pk): {status: n}}, recent {method pk: (n, first
    started)})}, run)`` of one subset's predictions, or of every dataset's (or one dataset's); None before
    the first refresh. Public methods' predictions that are not self-reported, or with ``include_private``
    every method's predictions that are not self-reported (what the workers run)."""
    run = current_run()
    if run is None:
        return None
    rows = PredictionTally.objects.filter(run=run, self_reported=False)
    rows = rows.filter(subset=subset) if subset is not None else rows.filter(subset__isnull=True)
    if dataset is not None:
        rows = rows.filter(dataset=dataset)
    versions = _methods()
    by_dataset: dict[int, tuple[dict, dict]] = {}
    for ds, version, status, n, n_recent, first in rows.values_list(
        "dataset_id", "method_version_id", "status", "n", "recent", "first_started"
    ):
        name, mpk, _, public = versions[version]
        if not include_private and not public:
            continue
        by_method, recent = by_dataset.setdefault(ds, ({}, {}))
        counts = by_method.setdefault((name, mpk), {})
        counts[status] = counts.get(status, 0) + n
        if n_recent:
            got = recent.get(mpk, (0, None))
            earliest = got[1] if first is None or (got[1] is not None and got[1] <= first) else first
            recent[mpk] = (got[0] + n_recent, earliest)
    return by_dataset, run


def scheduled_etas(
    run: TallyRun, *, subset: Subset | None = None, dataset: Dataset | None = None
) -> list[dict]:
    """The stored :func:`comparna.services.backlog.scope_etas` rows of one scope (a subset, a dataset, or the
    site when neither is given)."""
    rows = ScheduledEta.objects.filter(run=run)
    if subset is not None:
        rows = rows.filter(scope="subset", subset=subset)
    elif dataset is not None:
        rows = rows.filter(scope="dataset", dataset=dataset)
    else:  # the site's row and every method's on each dataset (a method's ETA is its slowest dataset's)
        rows = rows.filter(Q(scope="site") | Q(scope="dataset", method_version__isnull=False))
    return [
        {"dataset": ds, "version": v, "minutes": m, "unmeasured": u}
        for ds, v, m, u in rows.values_list("dataset_id", "method_version_id", "minutes", "unmeasured")
    ]


def first_started_in_window(run: TallyRun) -> dt.datetime | None:
    """When the first of the predictions finished in ``run``'s window started, of any method (what the
    workers ran: the one measuring time of every rate, :mod:`comparna.services.progress`)."""
    rows = PredictionTally.objects.filter(run=run, subset__isnull=True, self_reported=False, recent__gt=0)
    return rows.aggregate(
        first=Min("first_started")
    )["first"]


def version_tallies(*, versions) -> tuple[list[tuple[int, str, bool, int, int]], TallyRun] | None:
    """The predictions of these method versions (pks) on all datasets as last counted: ``(version, status,
    self_reported, n, blind)`` rows and their run; None before the first refresh (the caller counts). A few
    rows per version, whatever the number of predictions (the method page, issue 28)."""
    run = current_run()
    if run is None:
        return None
    rows = PredictionTally.objects.filter(run=run, subset__isnull=True, method_version__in=list(versions))
    return list(rows.values_list("method_version_id", "status", "self_reported", "n", "blind")), run


def subset_status_counts(*, subset: Subset) -> dict[str, dict[str, int]] | None:
    """Per active public method: its current version's predictions on ``subset`` by state (public, not
    self-reported), from the tallies; None before the first refresh."""
    run = current_run()
    if run is None:
        return None
    from predictors.models import MethodVersion

    current = dict(
        MethodVersion.objects.public().filter(is_current=True, method__active=True).values_list(
            "pk", "method__name"
        )
    )
    out: dict[str, dict[str, int]] = {}
    for version, status, n in PredictionTally.objects.filter(
        run=run, subset=subset, self_reported=False, method_version_id__in=list(current)
    ).values_list("method_version_id", "status", "n"):
        counts = out.setdefault(current[version], {})
        counts[status] = counts.get(status, 0) + n
    return out


def unfinished_of_active(*, subset: Subset) -> int | None:
    """Queued, running or awaiting predictions of active public methods' current versions on ``subset``
    (tallied); None before the first refresh."""
    counts = subset_status_counts(subset=subset)
    if counts is None:
        return None
    return sum(c.get(s, 0) for c in counts.values() for s in UNFINISHED)


def _digest(snapshot: RankingSnapshot, run: TallyRun) -> str:
    rows = sorted(
        PredictionTally.objects.filter(run=run, subset_id=snapshot.subset_id).values_list(
            "method_version_id", "status", "self_reported", "n"
        )
    )
    versions = sorted(
        Method.objects.filter(active=True).values_list(
            "pk", "visibility", "versions__pk", "versions__is_current"
        )
    )
    blob = json.dumps([snapshot.pk, snapshot.subset.dataset.version, rows, versions], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def check_freshness(*, run: TallyRun) -> int:
    """For the newest snapshot of every subset × definition: are its inputs still the current ones? Redone
    when what the tallies saw of the subset changed, or after :data:`RECHECK`; returns how many were checked
    (each check reads the subset's scores: background work, never a page's)."""
    checked = 0
    now = timezone.now()
    for subset in Subset.objects.select_related("dataset"):
        for definition in subset.definitions():
            snapshot = subset.rankings.filter(definition=definition).first()
            # provisional while predictions are unfinished whatever its inputs: nothing to check
            if snapshot is None or unfinished_of_active(subset=subset):
                continue
            digest = _digest(snapshot, run)
            known = RankingFreshness.objects.filter(snapshot=snapshot).first()
            if known is not None and known.digest == digest and now - known.checked_at < RECHECK:
                continue
            _, identity = build_counts_table(subset=subset, definition=definition)
            RankingFreshness.objects.update_or_create(
                snapshot=snapshot,
                defaults={
                    "inputs_current": inputs_hash(identity, snapshot.seed) == snapshot.inputs_hash,
                    "digest": digest,
                    "checked_at": now,
                },
            )
            checked += 1
    return checked


def inputs_current(snapshot: RankingSnapshot) -> bool | None:
    """Whether ``snapshot``'s inputs are the current ones, as last checked in the background; a snapshot
    stored after the last refresh was computed from the current inputs (True); None before the first
    refresh (the caller checks live)."""
    run = current_run()
    if run is None:
        return None
    known = (
        RankingFreshness.objects.filter(snapshot=snapshot).values_list("inputs_current", flat=True).first()
    )
    if known is not None:
        return known
    return True if snapshot.computed_at >= run.computed_at else None
