"""Celery tasks of the ingest app (queue ``default``)."""

from __future__ import annotations

from pathlib import Path

from celery import shared_task

from ingest.services import import_rnastrand


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def import_rnastrand_task(path: str) -> int:
    """Import RNA STRAND in the background; progress is stored on the ImportRun row. Returns its pk."""
    return import_rnastrand(path=Path(path)).pk


@shared_task(acks_late=True, queue="default", soft_time_limit=6 * 3600 - 60, time_limit=6 * 3600)
def poll_pdb_task() -> int | None:
    """Weekly: poll the RCSB from the last successful poll up to today. Returns the PollRun pk."""
    from ingest.services import next_poll_window, poll_pdb

    since, until = next_poll_window()
    if since > until:
        return None
    return poll_pdb(since=since, until=until).pk
