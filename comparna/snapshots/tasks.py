"""Celery tasks of dataset snapshots (queue ``default``).

Their names predate this package (``comparna.snapshot_tasks.*``) and are kept, so messages already queued
and schedules already stored keep working.
"""

from __future__ import annotations

from celery import shared_task

from comparna.models import Dataset
from comparna.snapshots.lifecycle import build_snapshot, make_snapshot_if_changed
from comparna.snapshots.models import DatasetSnapshot


@shared_task(
    name="comparna.snapshot_tasks.build_snapshot_task",
    acks_late=True,
    queue="default",
    soft_time_limit=3 * 3600 - 60,
    time_limit=3 * 3600,
)
def build_snapshot_task(snapshot_pk: int) -> str:
    """Build snapshot ``snapshot_pk``; a re-delivered task finds it done (or being built) and does nothing."""
    snapshot = DatasetSnapshot.objects.filter(pk=snapshot_pk).first()
    if snapshot is None:
        return "missing"
    return build_snapshot(snapshot=snapshot).status


@shared_task(
    name="comparna.snapshot_tasks.snapshot_if_changed_task",
    acks_late=True,
    queue="default",
    soft_time_limit=1700,
    time_limit=1800,
)
def snapshot_if_changed_task(dataset_id: int) -> int | None:
    """After an import or a poll: reserve (and queue the build of) a new snapshot if the data changed.

    Returns the new snapshot's number, or None when nothing changed.
    """
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    snapshot = make_snapshot_if_changed(dataset) if dataset is not None else None
    return snapshot.number if snapshot is not None else None
