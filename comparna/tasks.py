"""Celery tasks of the comparna app (queue ``default``)."""

from __future__ import annotations

import logging

from celery import shared_task

from comparna.services.leakage import recompute_unseen
from comparna.services.rankings import recompute_rankings
from comparna.snapshots.lifecycle import make_snapshot_if_changed
from predictors.models import Prediction


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def recompute_rankings_task() -> int:
    """Nightly: store a new ranking snapshot for every subset whose inputs changed; returns how many.

    Datasets whose rankings changed also get a new dataset snapshot (only if their rows changed), so the
    archived rankings match the archived data.
    """
    results = recompute_rankings()
    for dataset in {snap.dataset for snap, new in results if new}:
        pending = Prediction.objects.filter(
            target__dataset=dataset, status__in=[Prediction.Status.QUEUED, Prediction.Status.RUNNING]
        )
        if not pending.exists():  # archive settled data only, not every batch of a running backlog
            make_snapshot_if_changed(dataset)
    try:  # the leakage-aware rankings (a new row only where their inputs changed)
        recompute_unseen()
    except Exception:  # never lose the full rankings and snapshots stored above; retried next run
        logging.getLogger(__name__).exception("unseen rankings failed")
    return sum(1 for _, new in results if new)
