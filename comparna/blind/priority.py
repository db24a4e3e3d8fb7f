"""Blind targets go first: their predictions have a deadline, the rest of the queue has none.

The queue sends predictions in ``schedule_rank`` order (:mod:`predictors.scheduling`), and targets created
later rank after every existing one — so a backlog (a new method catching up on thousands of targets, a new
dataset) would keep a week's blind targets waiting past Tuesday's deadline. :func:`prioritise` gives every
prediction on a blind target of a week still before its deadline that is queued and not yet sent the rank
:data:`BLIND_RANK`, below any rank the scheduler hands out (those start at 0), and asks for a dispatch: the
next top-up of the window sends them first. Within them the scheduler's tie-break holds (method, then age).
Called by the blind tick (every 5 minutes).
"""

from __future__ import annotations

import datetime as dt

from comparna import clock, pipeline
from comparna.blind.models import BlindWeek
from predictors.models import Prediction

#: The rank of a waiting prediction on a blind target (scheduler ranks are >= 0).
BLIND_RANK = -1


def prioritise(*, now: dt.datetime | None = None) -> int:
    """Move waiting predictions on blind targets before the deadline to the front; returns how many moved."""
    now = now or clock.now()
    moved = (
        Prediction.objects.filter(
            status=Prediction.Status.QUEUED,
            dispatched_at__isnull=True,
            target__blind__week__status=BlindWeek.Status.OPEN,
            target__blind__week__deadline__gt=now,
        )
        .exclude(schedule_rank=BLIND_RANK)
        .update(schedule_rank=BLIND_RANK)
    )
    if moved:
        pipeline.dispatch_due()
    return moved
