"""Celery tasks of the blind track (queue ``default``); the schedules are in :mod:`comparna.blind.scheduled`.

Every task is idempotent: a week is imported once, a prediction frozen once, a commitment written once, a
target linked once; a message delivered twice, or a beat firing more often than needed, changes nothing.
"""

from __future__ import annotations

import logging

from celery import shared_task

from comparna import clock
from comparna.blind.freezing import commit_week, freeze_predictions
from comparna.blind.models import BlindWeek
from comparna.blind.prerelease import poll_prerelease
from comparna.blind.priority import prioritise
from comparna.blind.rankings import rank_blind
from comparna.blind.release import link_released
from comparna.blind.scoring import score_unscored

log = logging.getLogger(__name__)


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def poll_prerelease_task() -> str:
    """From Saturday 03:00 UTC: read the week's pre-release files once; a failed attempt (file not updated
    yet, unreachable, malformed or partial) is recorded and tried again after a growing wait."""
    result = poll_prerelease()
    if result.run is not None:
        log.info("pre-release poll %s: %s", result.week.release_date, result.message)
    return result.message


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def blind_tick_task() -> dict:
    """Send waiting predictions on blind targets first, freeze finished predictions, commit weeks whose
    deadline passed, link entries the poll already processed, score what is new and re-rank when something
    changed."""
    now = clock.now()
    first = prioritise(now=now)
    frozen = freeze_predictions(now=now)
    committed = [
        str(week.release_date)
        for week in BlindWeek.objects.filter(status=BlindWeek.Status.OPEN, deadline__lte=now)
        if commit_week(week, now=now)
    ]
    linked = link_released(now=now, ask_holdings=False)
    scored = score_unscored()
    ranked = sum(new for _, new in rank_blind()) if (scored or linked["scored"]) else 0
    return {"prioritised": first, "frozen": frozen, "committed": committed, "linked": linked,
            "scored": scored, "ranked": ranked}


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def link_released_task(poll_id: int | None = None) -> dict:
    """After a weekly PDB poll (and daily): link the released blind targets, close withdrawn or unusable
    ones, hold those the PDB keeps on hold, score and rank."""
    now = clock.now()
    freeze_predictions(now=now)
    for week in BlindWeek.objects.filter(status=BlindWeek.Status.OPEN, deadline__lte=now):
        commit_week(week, now=now)
    counts = link_released(now=now, ask_holdings=True)
    score_unscored()
    counts["ranked"] = sum(new for _, new in rank_blind())
    return counts
