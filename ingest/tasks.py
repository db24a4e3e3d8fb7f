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
    from comparna.models import Dataset
    from comparna.snapshots.service import make_snapshot_if_changed
    from ingest.services import next_poll_window, poll_pdb

    since, until = next_poll_window()
    if since > until:
        return None
    run = poll_pdb(since=since, until=until)
    dataset = Dataset.objects.filter(slug="pdb").first()
    if dataset is not None:
        make_snapshot_if_changed(dataset)
    return run.pk


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def assign_families_task(target_ids: list[int]) -> int:
    """Assign Rfam families to targets, store their comparative inputs, then queue comparative methods."""
    from comparna.models import Target
    from ingest.services import assign_families
    from predictors.models import MethodVersion
    from predictors.services import queue_predictions

    targets = list(Target.objects.filter(pk__in=target_ids))
    rows = assign_families(targets=targets)
    comparative = MethodVersion.objects.filter(is_current=True, method__active=True).exclude(
        method__input_kind="single"
    )
    queue_predictions(versions=comparative, targets=targets)
    return sum(1 for r in rows.values() if r.accession)


@shared_task(acks_late=True, queue="default", soft_time_limit=3500, time_limit=3600)
def assign_missing_families_task() -> int:
    """Periodic sweep: targets without a family under the current Rfam version (a lost message, or a new
    Rfam release) are assigned, in one batch per run. Returns how many were handled."""
    from ingest.services import targets_missing_family

    ids = targets_missing_family()
    if ids:
        assign_families_task(ids)
    return len(ids)
