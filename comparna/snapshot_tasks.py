"""Celery tasks of dataset snapshots (queue ``default``).

Imported by ``comparna/tasks.py`` so that the worker's autodiscovery registers them.
"""

from __future__ import annotations

from celery import shared_task

from comparna.models import Dataset
from comparna.models_snapshots import DatasetSnapshot
from comparna.snapshots.service import build_snapshot, make_snapshot_if_changed


@shared_task(acks_late=True, queue="default", soft_time_limit=3 * 3600 - 60, time_limit=3 * 3600)
def build_snapshot_task(snapshot_pk: int) -> str:
    """Build snapshot ``snapshot_pk``; a re-delivered task finds it done (or being built) and does nothing."""
    snapshot = DatasetSnapshot.objects.filter(pk=snapshot_pk).first()
    if snapshot is None:
        return "missing"
    return build_snapshot(snapshot=snapshot).status


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def snapshot_if_changed_task(dataset_id: int) -> int | None:
    """After an import or a poll: reserve (and queue the build of) a new snapshot if the data changed.

    Returns the new snapshot's number, or None when nothing changed.
    """
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    snapshot = make_snapshot_if_changed(dataset) if dataset is not None else None
    return snapshot.number if snapshot is not None else None
