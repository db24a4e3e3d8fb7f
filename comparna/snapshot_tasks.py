"""Celery task building a dataset snapshot in the background (queue ``default``).

Imported by ``comparna/tasks.py`` so that the worker's autodiscovery registers it.
"""

from __future__ import annotations

from celery import shared_task

from comparna.models_snapshots import DatasetSnapshot
from comparna.snapshots.service import build_snapshot


@shared_task(acks_late=True, queue="default", soft_time_limit=3 * 3600 - 60, time_limit=3 * 3600)
def build_snapshot_task(snapshot_pk: int) -> str:
    """Build snapshot ``snapshot_pk``; a re-delivered task finds it done (or being built) and does nothing."""
    snapshot = DatasetSnapshot.objects.filter(pk=snapshot_pk).first()
    if snapshot is None:
        return "missing"
    return build_snapshot(snapshot=snapshot).status
