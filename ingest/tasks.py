"""Celery tasks of the ingest app (queue ``default``)."""

from __future__ import annotations

from pathlib import Path

from celery import shared_task

from ingest.services import import_rnastrand


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def import_rnastrand_task(path: str) -> int:
    """Import RNA STRAND in the background; progress is stored on the ImportRun row. Returns its pk."""
    from comparna.models import Dataset
    from comparna.snapshots.service import make_snapshot_if_changed

    run = import_rnastrand(path=Path(path))
    make_snapshot_if_changed(Dataset.objects.get(slug="rnastrand"))
    return run.pk


@shared_task(acks_late=True, queue="default", soft_time_limit=6 * 3600 - 60, time_limit=6 * 3600)
def poll_pdb_task() -> int | None:
    """Weekly: poll the RCSB from the last successful poll up to today. Returns the PollRun pk."""
    from ingest.services import next_poll_window, poll_pdb

    from comparna.models import Dataset
    from comparna.snapshots.service import make_snapshot_if_changed

    since, until = next_poll_window()
    if since > until:
        return None
    run = poll_pdb(since=since, until=until)
    dataset = Dataset.objects.filter(slug="pdb").first()
    if dataset is not None:
        make_snapshot_if_changed(dataset)
    return run.pk
