"""When an owner's queued predictions should be done: the owner's own estimate, from the one rate estimator.

The workers' rate (:func:`recent_rate`) comes from :func:`comparna.services.progress.prediction_progress` run
with ``include_private=True``: the same workers run development methods, so their predictions count here, and
only here (public figures count public methods only).

Issue 37: the estimate is the method's own — its queued or running predictions at its own rate, weighted by
target length (:func:`queue_eta`) — not the public schedule's (:mod:`comparna.services.backlog`), which said
6 h for a development method whose predictions have their own share of the workers
(:mod:`predictors.scheduling`, lanes). Before any of its predictions finished in the window there is no
estimate, and the message says so rather than inventing one.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from comparna.services import backlog
from comparna.services.progress import WINDOW_MINUTES, WORKER_QUEUE, eta_text, prediction_progress
from predictors.models import MethodVersion
from predictors.scheduling import MethodCost

#: Predictions the workers still have to run (uploads a web service owes are not the workers' work).
QUEUED = WORKER_QUEUE


def recent_rate(*, now: dt.datetime | None = None, window_minutes: float = WINDOW_MINUTES) -> dict:
    """``{"finished", "minutes", "per_minute", "queued_total"}``: predictions (of every method the workers
    run) finished in the window and the rate (``per_minute`` None when none finished), as
    :func:`comparna.services.progress.prediction_progress` measures them."""
    progress = prediction_progress(now=now, window_minutes=window_minutes, include_private=True)
    return {
        "finished": progress["recent"],
        "minutes": progress["measured_minutes"],
        "per_minute": progress["rate_per_min"],
        "queued_total": progress["workers_left"],
    }


def queue_eta(version: MethodVersion, *, now: dt.datetime | None = None) -> dict:
    """The estimate for ``version``'s queued predictions, at its own measured rate.

    Its predictions run in the development lane's own share of the workers, in schedule order over every
    dataset, so the estimate is pooled over them and weighted by target length (the scheduler's units,
    :func:`comparna.services.backlog.units`): its queued units over the units it finished per minute,
    measured since its first run in the window (or over the whole window), not under a minute. Per dataset,
    a method that had just reached a dataset had "no estimate" with hundreds finished elsewhere (``make
    run``, stop 44).

    Returns ``{"mine", "queued_total", "rate", "minutes", "text"}`` (``rate``: its own ``{"finished",
    "minutes", "per_minute"}``, predictions a minute); ``minutes`` is None (and ``text`` says why) when
    nothing of it finished in the window.
    """
    live = now is not None  # else the workers' totals come from the background counts (issue 28)
    now = now or timezone.now()
    queued = version.predictions.filter(status__in=QUEUED)
    mine = queued.count()
    total = recent_rate(now=now if live else None)["queued_total"] if mine else 0
    rate = {"finished": 0, "minutes": float(WINDOW_MINUTES), "per_minute": None}
    if mine == 0:
        return {"mine": 0, "queued_total": total, "rate": rate, "minutes": 0.0, "text": "nothing queued"}
    since = now - dt.timedelta(minutes=WINDOW_MINUTES)
    ran = version.predictions.filter(
        finished_at__gte=since, finished_at__lte=now, runtime_s__isnull=False
    ).exclude(status__in=backlog.NOT_RUN)
    runs = list(ran.values_list("target__length", "runtime_s", "started_at"))
    if not runs:
        text = (
            f"no estimate yet: none of its predictions finished in the last {WINDOW_MINUTES} min "
            f"({mine} queued; development methods have their own share of the workers, so they start "
            "within minutes)"
        )
        return {"mine": mine, "queued_total": total, "rate": rate, "minutes": None, "text": text}
    # its cost model fitted to its own runs (the public ETA's, comparna.services.backlog.cost_model)
    fixed, exponent = backlog.cost_model([(n, rt) for n, rt, _ in runs],
                                         MethodCost.from_spec(version.spec or {}).exponent)
    first = min((started for _, _, started in runs if started is not None), default=None)
    span = backlog.measuring_minutes(first, now=now, window_minutes=WINDOW_MINUTES)
    rate = {"finished": len(runs), "minutes": span, "per_minute": len(runs) / span}
    done = sum(backlog.units(n, exponent, fixed) for n, _, _ in runs)
    left = queued.aggregate(units=backlog.units_sum(exponent, fixed))["units"] or 0.0
    minutes = left / (done / span)
    within = "within a minute" if minutes < 1 else f"within about {eta_text(minutes)}"
    text = (
        f"done {within} at its own recent rate "
        f"({rate['per_minute']:.1f} predictions/min over the last {span:.0f} min, weighted by target length; "
        f"{mine} queued)"
    )
    return {"mine": mine, "queued_total": total, "rate": rate, "minutes": minutes, "text": text}


