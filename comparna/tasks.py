"""Celery tasks of the comparna app (queue ``default``)."""

from __future__ import annotations

from celery import shared_task

from comparna.services.rankings import recompute_rankings


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def recompute_rankings_task() -> int:
    """Nightly: store a new ranking snapshot for every subset whose inputs changed; returns how many."""
    return sum(1 for _, new in recompute_rankings() if new)
