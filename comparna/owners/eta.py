"""When an owner's queued predictions should be done: the estimate every page gives, from one computation.

The workers' throughput and the ETA come from :func:`comparna.services.progress.prediction_progress` — the
computation the home page and the ranking pages use (issue 27: the home page said 297 predictions/min and
5 h 37 min while an owner's page said 1256/min and 1 h 22 min, because this module counted "too long"
outcomes, recorded without running anything, as throughput and measured over its own span). Here it runs
with ``include_private=True``: the same workers run development methods, so their predictions count too;
with none of those the owner's estimate and the home page's are the same numbers.

The queue is shared, and the order in which queued predictions are taken is the scheduler's business, so
the estimate is an upper bound: the owner's predictions are done at the latest when everything the workers
still have to run (queued or running, of active methods) is done. With nothing finished in the window there
is no estimate (workers stopped or idle), and the message says so rather than inventing one.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from comparna.services.progress import WINDOW_MINUTES, WORKER_QUEUE, eta_text, prediction_progress
from predictors.models import MethodVersion

#: Predictions the workers still have to run (uploads a web service owes are not the workers' work).
QUEUED = WORKER_QUEUE


def recent_rate(*, now: dt.datetime | None = None, window_minutes: float = WINDOW_MINUTES) -> dict:
    """``{"finished", "minutes", "per_minute"}``: predictions finished in the window and the rate
    (``per_minute`` None when none finished), as :func:`comparna.services.progress.prediction_progress`
    measures them."""
    progress = prediction_progress(now=now, window_minutes=window_minutes, include_private=True)
    return {
        "finished": progress["recent"],
        "minutes": progress["measured_minutes"],
        "per_minute": progress["rate_per_min"],
        "queued_total": progress["workers_left"],
    }


def queue_eta(version: MethodVersion, *, now: dt.datetime | None = None) -> dict:
    """The estimate for ``version``'s queued predictions.

    Returns ``{"mine", "queued_total", "rate", "minutes", "text"}``; ``minutes`` is None (and ``text`` says
    why) when there is nothing measured to estimate from.
    """
    now = now or timezone.now()
    mine = version.predictions.filter(status__in=QUEUED).count()
    rate = recent_rate(now=now)
    total = rate["queued_total"]
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
