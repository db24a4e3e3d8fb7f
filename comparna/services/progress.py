"""Prediction progress with an ETA from measured throughput, and whether a ranking has settled.

Every page that shows progress reads it here (home, rankings; others may import it).

- **Throughput** is measured, not assumed: the predictions that finished in the last :data:`WINDOW_MINUTES`
  minutes (not counting "too long", recorded without running anything), per method and overall, divided
  by **one** measuring time for all of them: the window, or less when the first of them (of any method)
  started within it. Per-method rates therefore add up to the overall rate and differ exactly when the
  methods' counts differ (issue 27: with a span per method, a method that had just started one batch of 16
  showed "16.0 per minute" like every other). Every page — home, rankings, the owner's method page
  (:mod:`comparna.owners.eta`, ``include_private=True``: the workers run development methods too) — reads
  this one computation.
- **ETA** = predictions the workers still have to run (queued or running, of active methods) / throughput.
  With nothing finished in the window there is no estimate (stopped workers, or nothing running), and the
  page says so.
- **Settled**: a ranking snapshot is *settled* when no prediction of an active method's current version on
  the subset's targets is queued, running or awaiting an upload, and the snapshot's inputs are the current
  ones (recomputing it now would give the same ranking). Until then it is *provisional*.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

from django.db.models import Count, Min, Q
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.services import tallies
from comparna.services.rankings import build_counts_table, inputs_hash
from predictors.models import Method, Prediction

WINDOW_MINUTES = 15
UNFINISHED = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)
#: What the workers still have to run (the ETA's numerator).
WORKER_QUEUE = (Prediction.Status.QUEUED, Prediction.Status.RUNNING)

SETTLED_DEFINITION = (
    "Settled means: no prediction of an active method on this subset's targets is queued, running or "
    "awaiting an upload, and this snapshot was computed from the current scores (recomputing it would give "
    "the same ranking). Until then the ranking is provisional: ranks and scores can still change."
)


def eta_text(minutes: float | None) -> str:
    """A rounded human duration: "under a minute", "12 min", "3 h 05 min", "2 d 4 h"."""
    if minutes is None or math.isnan(minutes):
        return "unknown"
    if minutes < 1:
        return "under a minute"
    m = int(round(minutes))
    if m < 60:
        return f"{m} min"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h} h {m:02d} min"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


def _eta(pending: int, rate: float | None, now: dt.datetime) -> dict | None:
    if pending == 0:
        return {"minutes": 0.0, "text": "done", "at": now}
    if not rate:
        return None
    minutes = pending / rate
    return {"minutes": minutes, "text": eta_text(minutes), "at": now + dt.timedelta(minutes=minutes)}


def prediction_progress(
    *,
    dataset: Dataset | None = None,
    subset: Subset | None = None,
    window_minutes: float = WINDOW_MINUTES,
    now: dt.datetime | None = None,
    include_private: bool = False,
    live: bool = False,
) -> dict:
    """Predictions of public methods (on a dataset's or subset's targets, or all) by state, per method, with
    the measured throughput and the ETA of the unfinished ones.

    The counts come from the tallies a periodic task keeps (:mod:`comparna.services.tallies`, at most a
    minute old; the result's ``now`` is when they were counted): a page never counts the predictions table
    (issue 28). With ``live``, another window or ``now``, or before the first count, they are counted here.

    Returns ``{"total", "finished", "pending", "by_status", "recent", "window_minutes", "measured_minutes",
    "rate_per_min", "eta", "methods": [{"method", "pk", "total", "finished", "pending", "ok", "failed",
    "recent", "rate_per_min", "eta"}], "now"}``; ``eta`` is ``{"minutes", "text", "at"}`` or None (no
    prediction finished in the window while some are unfinished).
    """
    counted = None
    if not live and now is None and window_minutes == WINDOW_MINUTES:
        counted = tallies.progress_counts(dataset=dataset, subset=subset, include_private=include_private)
    if counted is not None:
        by_method, recent, run = counted
        return _progress(by_method, recent, window_minutes=window_minutes, now=run.computed_at)
    now = now or timezone.now()
    # what the workers run: development methods' predictions too (the owner's page), else what counts publicly
    qs = Prediction.objects.exclude(self_reported=True) if include_private else Prediction.objects.public()
    if dataset is not None:
        qs = qs.filter(target__dataset=dataset)
    if subset is not None:
        qs = qs.filter(target__subsets=subset)
    by_method: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for name, pk, status, n in (
        qs.values_list("method_version__method__name", "method_version__method_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        by_method[(name, pk)][status] = n
    since = now - dt.timedelta(minutes=window_minutes)
    # "too long" is recorded without running the program (often at queue time): not throughput
    recent_qs = qs.filter(finished_at__gte=since, finished_at__lte=now).exclude(
        status__in=(*UNFINISHED, Prediction.Status.TOO_LONG)
    )
    recent = {
        row["method_version__method__name"]: (row["n"], row["first"])
        for row in recent_qs.values("method_version__method__name")
        .annotate(n=Count("id"), first=Min("started_at"))
        .order_by()
    }
    return _progress(by_method, recent, window_minutes=window_minutes, now=now)


def _progress(by_method: dict, recent: dict, *, window_minutes: float, now: dt.datetime) -> dict:
    """:func:`prediction_progress`'s result from its counts: ``by_method`` {(name, method pk): {status: n}},
    ``recent`` {name: (finished in the window, first of them started)}."""
    since = now - dt.timedelta(minutes=window_minutes)

    # one measuring time for every method and the total: from the first start among all of them
    firsts = [f for _, f in recent.values() if f is not None]
    span = window_minutes
    if firsts and min(firsts) > since:
        span = max((now - min(firsts)).total_seconds() / 60.0, 1.0)

    def rate(n: int) -> float | None:
        return n / span if n else None

    # what the workers still have to run: queued or running predictions of active methods (a deactivated
    # method's predictions wait; an upload a web service owes is not the workers' work)
    active = set(Method.objects.filter(active=True).values_list("pk", flat=True))
    workers_left = 0
    methods = []
    by_status: dict[str, int] = defaultdict(int)
    for (name, pk), counts in sorted(by_method.items(), key=lambda kv: kv[0][0].lower()):
        for status, n in counts.items():
            by_status[status] += n
        total = sum(counts.values())
        pending = sum(counts.get(s, 0) for s in UNFINISHED)
        n_recent, _ = recent.get(name, (0, None))
        r = rate(n_recent)
        queued = sum(counts.get(st, 0) for st in WORKER_QUEUE) if pk in active else 0
        workers_left += queued
        methods.append(
            {
                "method": name,
                "pk": pk,
                "total": total,
                "finished": total - pending,
                "pending": pending,
                "ok": counts.get(Prediction.Status.OK, 0),
                "failed": total - pending - counts.get(Prediction.Status.OK, 0),
                "recent": n_recent,
                "rate_per_min": r,
                # its own queue at its own measured rate (the same measuring time as every other method)
                "eta": _eta(queued, r, now) if pk in active else None,
            }
        )
    total = sum(by_status.values())
    pending = sum(by_status.get(s, 0) for s in UNFINISHED)
    n_recent = sum(n for n, _ in recent.values())
    overall_rate = rate(n_recent)
    return {
        "total": total,
        "finished": total - pending,
        "pending": pending,
        "percent": 100.0 * (total - pending) / total if total else 100.0,
        "by_status": dict(by_status),
        "recent": n_recent,
        "window_minutes": window_minutes,
        "measured_minutes": span,
        "rate_per_min": overall_rate,
        "workers_left": workers_left,
        "eta": _eta(workers_left, overall_rate, now),
        "methods": methods,
        "now": now,
    }


def unfinished_of_active(*, subset: Subset, live: bool = False) -> int:
    """Queued, running or awaiting predictions of active public methods' current versions on ``subset``
    (tallied in the background unless ``live``; counted here before the first count)."""
    tallied = None if live else tallies.unfinished_of_active(subset=subset)
    if tallied is not None:
        return tallied
    return Prediction.objects.public().filter(
        Q(method_version__is_current=True) & Q(method_version__method__active=True),
        target__subsets=subset,
        status__in=UNFINISHED,
    ).count()


def ranking_state(snapshot: RankingSnapshot, *, live: bool = False) -> dict:
    """``{"settled": bool, "label": "settled" | "provisional", "reasons": [...], "pending": n,
    "inputs_current": bool | None}`` of a snapshot (:data:`SETTLED_DEFINITION`). Pending predictions and
    whether the inputs are still current come from the background counts and checks
    (:mod:`comparna.services.tallies`) unless ``live``; ``inputs_current`` is None when not checked (a newer
    snapshot exists, or predictions are unfinished)."""
    pending = unfinished_of_active(subset=snapshot.subset, live=live)
    newest = is_newest(snapshot)
    current = None
    if newest and not pending:
        current = None if live else tallies.inputs_current(snapshot)
        if current is None:  # before the first background check: compared here
            _, identity = build_counts_table(subset=snapshot.subset, definition=snapshot.definition)
            current = inputs_hash(identity, snapshot.seed) == snapshot.inputs_hash
    return state_of(pending=pending, newest=newest, inputs_current=current)


def is_newest(snapshot: RankingSnapshot) -> bool:
    """Whether no newer snapshot of the snapshot's subset × definition exists."""
    newest = (
        RankingSnapshot.objects.filter(subset=snapshot.subset_id, definition=snapshot.definition)
        .values_list("pk", flat=True)
        .first()
    )
    return newest == snapshot.pk


def state_of(*, pending: int, newest: bool, inputs_current: bool | None) -> dict:
    """:func:`ranking_state` from its facts: ``pending`` unfinished predictions of active methods, whether
    the snapshot is the ``newest`` of its ranking, and (for the newest without pending predictions) whether
    its inputs are the current ones (what the background stores in ``tallies.models.RankingStatus``)."""
    reasons = []
    if pending:
        reasons.append(
            f"{pending} prediction{'s' if pending != 1 else ''} of active methods still unfinished"
        )
    if not newest:
        reasons.append("a newer snapshot of this ranking exists")
        inputs_current = None
    elif not pending and not inputs_current:
        reasons.append(
            "scores changed since this snapshot was computed (the next recomputation updates it)"
        )
    settled = not reasons
    return {
        "settled": settled,
        "label": "settled" if settled else "provisional",
        "reasons": reasons,
        "pending": pending,
        "inputs_current": inputs_current if newest and not pending else None,
        "definition": SETTLED_DEFINITION,
    }
