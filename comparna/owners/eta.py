"""When an owner's queued predictions should be done: the owner's own estimate, from the one rate estimator.

The rates come from :func:`comparna.services.progress.prediction_progress` — the computation the home page and
the ranking pages use (issue 27) — run with ``include_private=True``: the same workers run development
methods, so their predictions count here, and only here (public figures count public methods only).

Issue 37: the estimate is the method's own — its queued or running predictions on each dataset at its own
rate there over the window, the slowest dataset deciding (:mod:`comparna.services.progress`) — not the public
schedule's (:mod:`comparna.services.backlog`), which said 6 h for a development method whose predictions
have their own share of the workers (:mod:`predictors.scheduling`, lanes). Before any of its predictions
finished in the window there is no estimate, and the message says so rather than inventing one.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from comparna.services.progress import WINDOW_MINUTES, WORKER_QUEUE, eta_text, prediction_progress
from predictors.models import MethodVersion

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
    """The estimate for ``version``'s queued predictions, at its method's own measured rate.

    Returns ``{"mine", "queued_total", "rate", "minutes", "text"}`` (``rate``: the method's own
    ``{"finished", "minutes", "per_minute"}``); ``minutes`` is None (and ``text`` says why) when nothing of it
    finished in the window.
    """
    live = now is not None
    now = now or timezone.now()
    mine = version.predictions.filter(status__in=QUEUED).count()
    progress = prediction_progress(
        now=now if live else None, include_private=True, window_minutes=WINDOW_MINUTES
    )
    own = next((m for m in progress["methods"] if m["pk"] == version.method_id), None)
    rate = {
        "finished": own["recent"] if own else 0,
        "minutes": progress["measured_minutes"],
        "per_minute": own["rate_per_min"] if own else None,
    }
    total = progress["workers_left"]
    if mine == 0:
        return {"mine": 0, "queued_total": total, "rate": rate, "minutes": 0.0, "text": "nothing queued"}
    eta = own["eta"] if own else None
    if not rate["per_minute"] or not eta:
        text = (
            f"no estimate yet: none of its predictions finished in the last {WINDOW_MINUTES} min "
            f"({mine} queued; development methods have their own share of the workers, so they start "
            "within minutes)"
        )
        return {"mine": mine, "queued_total": total, "rate": rate, "minutes": None, "text": text}
    minutes = eta["minutes"]
    within = "within a minute" if minutes < 1 else f"within about {eta_text(minutes)}"
    text = (
        f"done {within} at its own recent rate "
        f"({rate['per_minute']:.1f} predictions/min over the last {rate['minutes']:.0f} min; "
        f"{mine} queued)"
    )
    return {"mine": mine, "queued_total": total, "rate": rate, "minutes": minutes, "text": text}
