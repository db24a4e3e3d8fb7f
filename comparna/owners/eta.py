"""When an owner's queued predictions should be done: an estimate from the workers' measured throughput.

The workers' recent rate is the number of predictions (of every method) that finished in the last
:data:`WINDOW_MINUTES` minutes, divided by the time measured (the window, or less when the first of them
started inside it). The queue is shared, and the order in which queued predictions are taken is the
scheduler's business, so the estimate is an upper bound: the owner's predictions are done at the latest
when everything queued now (of active methods: a deactivated method's predictions wait) is done,
``queued everywhere / rate``. With nothing finished in the window there
is no estimate (workers stopped or idle), and the message says so rather than inventing one.

The window and the wording of durations are those of :mod:`comparna.services.progress` (the public pages'
progress); the rate here counts every method's predictions, development ones included, since the same
workers run them all.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Min
from django.utils import timezone

from comparna.services.progress import WINDOW_MINUTES, eta_text
from predictors.models import MethodVersion, Prediction

#: Predictions the workers still have to run (uploads a web service owes are not the workers' work).
QUEUED = (Prediction.Status.QUEUED, Prediction.Status.RUNNING)


def recent_rate(*, now: dt.datetime | None = None, window_minutes: float = WINDOW_MINUTES) -> dict:
    """``{"finished", "minutes", "per_minute"}``: predictions finished in the window and the rate
    (``per_minute`` None when none finished)."""
    now = now or timezone.now()
    since = now - dt.timedelta(minutes=window_minutes)
    recent = Prediction.objects.filter(finished_at__gte=since, finished_at__lte=now).exclude(
        status__in=(*QUEUED, Prediction.Status.AWAITING)
    )
    agg = recent.aggregate(first=Min("started_at"))
    n = recent.count()
    if n == 0:
        return {"finished": 0, "minutes": window_minutes, "per_minute": None}
    start = max(since, agg["first"]) if agg["first"] else since
    minutes = max((now - start).total_seconds() / 60, 1.0)
    return {"finished": n, "minutes": minutes, "per_minute": n / minutes}


def queue_eta(version: MethodVersion, *, now: dt.datetime | None = None) -> dict:
    """The estimate for ``version``'s queued predictions.

    Returns ``{"mine", "queued_total", "rate", "minutes", "text"}``; ``minutes`` is None (and ``text`` says
    why) when there is nothing measured to estimate from.
    """
    now = now or timezone.now()
    mine = version.predictions.filter(status__in=QUEUED).count()
    total = Prediction.objects.filter(status__in=QUEUED, method_version__method__active=True).count()
    rate = recent_rate(now=now)
    if mine == 0:
        return {"mine": 0, "queued_total": total, "rate": rate, "minutes": 0.0, "text": "nothing queued"}
    if rate["per_minute"] is None:
        text = (
            f"no estimate yet: no prediction finished in the last {WINDOW_MINUTES} min "
            f"({total} queued in all)"
        )
        return {"mine": mine, "queued_total": total, "rate": rate, "minutes": None, "text": text}
    minutes = total / rate["per_minute"]
    within = "within a minute" if minutes < 1 else f"within about {eta_text(minutes)}"
    text = (
        f"done {within} at the workers' recent rate "
        f"({rate['per_minute']:.1f} predictions/min over the last {rate['minutes']:.0f} min; "
        f"{total} queued in all)"
    )
    return {"mine": mine, "queued_total": total, "rate": rate, "minutes": minutes, "text": text}
