"""Celery tasks of the ingest app; what follows each is decided in comparna.pipeline.

Queue ``default``, except the Rfam family assignment: queue ``families``. A batch of 100 targets is minutes
of cmscan and cmalign, and an import queues one batch per 100 new targets (an hour or more of CPU after
``make run``'s imports); on ``default`` they would hold up the ranking refresh and every other short task.
"""

from __future__ import annotations

from pathlib import Path

from celery import shared_task

from comparna import clock, pipeline
from comparna.models import Dataset, Target
from ingest.services.datasets import import_dataset
from ingest.services.pdb import PDB_SLUG, next_poll_window, poll_pdb
from ingest.services.rfam import assign_families, targets_missing_family
from ingest.services.strand import RNASTRAND_SLUG


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def import_dataset_task(name: str, path: str | None = None) -> int:
    """Import a declared dataset in the background; progress is on the ImportRun row. Returns its pk."""
    run = import_dataset(name=name, path=Path(path) if path else None)
    dataset_id = Dataset.objects.filter(slug=name).values_list("pk", flat=True).first()
    if dataset_id is not None:
        pipeline.dataset_changed(dataset_id=dataset_id)
    return run.pk


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def import_rnastrand_task(path: str) -> int:
    """Import RNA STRAND in the background (:func:`import_dataset_task` for its declaration)."""
    return import_dataset_task(RNASTRAND_SLUG, path)


@shared_task(acks_late=True, queue="default", soft_time_limit=6 * 3600 - 60, time_limit=6 * 3600)
def poll_pdb_task() -> int | None:
    """Weekly: poll the RCSB from the last successful poll up to today. Returns the PollRun pk."""
    since, until = next_poll_window(today=clock.today())
    if since > until:
        return None
    run = poll_pdb(since=since, until=until)
    dataset_id = Dataset.objects.filter(slug=PDB_SLUG).values_list("pk", flat=True).first()
    if dataset_id is not None:
        pipeline.dataset_changed(dataset_id=dataset_id)
    pipeline.pdb_poll_finished(poll_id=run.pk)
    return run.pk


@shared_task(acks_late=True, queue="families", soft_time_limit=3500, time_limit=3600)
def assign_families_task(target_ids: list[int]) -> int:
    """Assign Rfam families to targets and store their comparative inputs (then the pipeline queues the
    comparative methods). Returns how many got a family."""
    rows = assign_families(targets=list(Target.objects.filter(pk__in=target_ids)))
    return sum(1 for r in rows.values() if r.accession)


@shared_task(acks_late=True, queue="families", soft_time_limit=3500, time_limit=3600)
def assign_missing_families_task() -> int:
    """Periodic sweep: targets without a family under the current Rfam version (a lost message, or a new
    Rfam release) are assigned, in one batch per run. Returns how many were handled."""
    ids = targets_missing_family()
    if ids:
        assign_families_task(ids)
    return len(ids)


@shared_task(acks_late=True, queue="default", soft_time_limit=300, time_limit=360)
def refresh_release_windows_task() -> dict[str, int]:
    """Daily: move the PDB set's rolling windows (last 4 weeks, 6 months, year) on to today."""
    from ingest.services.pdb import refresh_release_windows

    return refresh_release_windows()
