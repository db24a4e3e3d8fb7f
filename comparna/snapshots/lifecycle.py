"""Numbered snapshots: reserving the next number, building its archive into the snapshot store (with
progress, taking over a dead builder's work), making one only when the data changed, and finding the one
that holds a ranking's data."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from comparna import pipeline
from comparna.models import Dataset, RankingSnapshot
from comparna.snapshots.common import Progress, SnapshotError, snapshot_root_name
from comparna.snapshots.contents import dataset_state_hash
from comparna.snapshots.export import write_snapshot_archive
from comparna.snapshots.models import DatasetSnapshot

log = logging.getLogger(__name__)

# A builder silent for this long is presumed dead (worker killed); a re-delivered task may take over.
STALE_AFTER = dt.timedelta(minutes=10)


def snapshot_dir() -> Path:
    """Where numbered snapshots are stored (``settings.SNAPSHOT_DIR``, default ``DATA_DIR/snapshots``)."""
    return Path(getattr(settings, "SNAPSHOT_DIR", Path(settings.DATA_DIR) / "snapshots"))


def snapshot_path(snapshot: DatasetSnapshot) -> Path:
    return snapshot_dir() / snapshot.path


def next_number(dataset: Dataset) -> int:
    return (DatasetSnapshot.objects.filter(dataset=dataset).aggregate(n=Max("number"))["n"] or 0) + 1


def create_snapshot(
    *, dataset: Dataset, include_predictions: bool = True, state_hash: str = ""
) -> DatasetSnapshot:
    """Reserve the next number of ``dataset`` as a pending snapshot (built by :func:`build_snapshot`)."""
    for _ in range(5):
        try:
            with transaction.atomic():
                return DatasetSnapshot.objects.create(
                    dataset=dataset,
                    number=next_number(dataset),
                    include_predictions=include_predictions,
                    dataset_version=dataset.version,
                    state_hash=state_hash,
                )
        except IntegrityError:  # another process took that number meanwhile
            continue
    raise SnapshotError(f"could not reserve a snapshot number for {dataset.slug}")


def make_snapshot_if_changed(
    dataset: Dataset, *, include_predictions: bool = True, background: bool = True
) -> DatasetSnapshot | None:
    """Make a new numbered snapshot when the dataset or its predictions changed since the last one.

    Compares :func:`dataset_state_hash` with the state the newest non-failed snapshot was built from. Returns
    the new snapshot, or None when nothing changed. With ``background`` the build is queued as a Celery task
    once the surrounding transaction commits; otherwise it is built here.
    """
    dataset.refresh_from_db()
    state = dataset_state_hash(dataset)
    last = (
        DatasetSnapshot.objects.filter(dataset=dataset, include_predictions=include_predictions)
        .exclude(status=DatasetSnapshot.Status.FAILED)
        .order_by("-number")
        .first()
    )
    if last is not None and last.state_hash == state:
        return None
    snapshot = create_snapshot(dataset=dataset, include_predictions=include_predictions, state_hash=state)
    if background:
        pipeline.snapshot_reserved(snapshot_id=snapshot.pk)
    else:
        build_snapshot(snapshot=snapshot)
    return snapshot


def claim_build(snapshot: DatasetSnapshot) -> bool:
    """Take ``snapshot`` for building: pending or failed, or building with a stale heartbeat."""
    stale = timezone.now() - STALE_AFTER
    S = DatasetSnapshot.Status
    claimed = (
        DatasetSnapshot.objects.filter(pk=snapshot.pk)
        .filter(status__in=[S.PENDING, S.FAILED])
        .update(status=S.BUILDING, heartbeat_at=timezone.now(), error="", done=0, stage="starting")
    ) or (
        DatasetSnapshot.objects.filter(pk=snapshot.pk, status=S.BUILDING, heartbeat_at__lt=stale).update(
            heartbeat_at=timezone.now(), error="", done=0, stage="restarting"
        )
    )
    return bool(claimed)


def build_snapshot(*, snapshot: DatasetSnapshot, progress: Progress | None = None) -> DatasetSnapshot:
    """Build a pending snapshot into the snapshot store; idempotent (a done snapshot is left as it is).

    Progress is stored on the row (``stage``, ``done``, ``total``) for the snapshot page. A snapshot that
    another live builder is working on is left alone.
    """
    snapshot.refresh_from_db()
    if snapshot.status == DatasetSnapshot.Status.DONE or not claim_build(snapshot):
        snapshot.refresh_from_db()
        return snapshot
    dataset = snapshot.dataset
    relative = Path(dataset.slug) / f"{snapshot_root_name(dataset.slug, snapshot.number)}.tar.gz"
    final = snapshot_dir() / relative
    final.parent.mkdir(parents=True, exist_ok=True)
    # Never served: its row is not done, so it is a leftover of a builder that died after writing.
    final.unlink(missing_ok=True)

    def report(stage: str, done: int, total: int) -> None:
        DatasetSnapshot.objects.filter(pk=snapshot.pk).update(
            stage=stage[:100], done=done, total=total, heartbeat_at=timezone.now()
        )
        if progress is not None:
            progress(stage, done, total)

    try:
        built = write_snapshot_archive(
            dataset=dataset,
            path=final,
            number=snapshot.number,
            created_at=snapshot.created_at,
            include_predictions=snapshot.include_predictions,
            progress=report,
        )
    except Exception as exc:
        DatasetSnapshot.objects.filter(pk=snapshot.pk).update(
            status=DatasetSnapshot.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:5000],
            finished_at=timezone.now(),
        )
        raise
    DatasetSnapshot.objects.filter(pk=snapshot.pk).update(
        status=DatasetSnapshot.Status.DONE,
        path=relative.as_posix(),
        size=built.info.size,
        sha256=built.info.sha256,
        contents=built.contents,
        state_hash=built.state_hash,
        dataset_version=dataset.version,
        finished_at=timezone.now(),
        stage="done",
    )
    snapshot.refresh_from_db()
    log.info("snapshot %s: %s bytes, sha256 %s", snapshot, snapshot.size, snapshot.sha256)
    return snapshot


def snapshot_for_ranking(ranking: RankingSnapshot) -> DatasetSnapshot | None:
    """The newest done snapshot whose archive holds exactly the data ``ranking`` was computed on."""
    for snap in DatasetSnapshot.objects.filter(dataset=ranking.dataset, status=DatasetSnapshot.Status.DONE):
        for row in snap.contents.get("rankings", []):
            if row.get("inputs_hash") == ranking.inputs_hash and row.get("matches_snapshot_data"):
                return snap
    return None
