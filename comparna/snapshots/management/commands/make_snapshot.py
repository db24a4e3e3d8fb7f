"""Build a snapshot archive of a dataset on demand.

By default the snapshot is recorded: it gets the dataset's next number, is stored in the snapshot store
(served at /snapshots/<dataset>/<number>/) and, with ``--output``, copied to PATH as well. ``--no-record``
writes an unnumbered on-demand archive to ``--output`` only, leaving the numbering untouched.
``--if-changed`` records a new snapshot only when the dataset or its predictions changed since the last one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from comparna.models import Dataset
from comparna.snapshots.archive import ArchiveError
from comparna.snapshots.contents import dataset_state_hash
from comparna.snapshots.export import write_snapshot_archive
from comparna.snapshots.lifecycle import (
    build_snapshot,
    create_snapshot,
    make_snapshot_if_changed,
    snapshot_path,
)


class Command(BaseCommand):
    help = "Build a snapshot archive of DATASET (recorded and numbered unless --no-record)."

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="dataset slug, e.g. rnastrand or pdb")
        parser.add_argument(
            "--output", type=Path, help="also write the archive to this path (must not exist)"
        )
        parser.add_argument(
            "--no-record", action="store_true", help="write an unnumbered on-demand archive to --output only"
        )
        parser.add_argument(
            "--no-predictions", action="store_true", help="leave out predictions, counts and rankings"
        )
        parser.add_argument(
            "--if-changed",
            action="store_true",
            help="record a new snapshot only if the dataset or its predictions changed",
        )

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(slug=opts["dataset"]).first()
        if dataset is None:
            known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"unknown dataset {opts['dataset']!r} (known: {known})")
        output: Path | None = opts["output"]
        if output is not None:
            if output.exists():
                raise CommandError(f"{output} exists; snapshots are never overwritten")
            if not output.parent.is_dir():
                raise CommandError(f"directory {output.parent} does not exist")
        include = not opts["no_predictions"]
        bar = tqdm(total=0, unit="item", disable=None, file=self.stderr._out)

        def progress(stage: str, done: int, total: int) -> None:
            bar.total = total
            bar.set_description(stage[:30])
            bar.n = done
            bar.refresh()

        try:
            if opts["no_record"]:
                if output is None:
                    raise CommandError("--no-record needs --output")
                built = write_snapshot_archive(
                    dataset=dataset,
                    path=output,
                    number=0,
                    created_at=timezone.now(),
                    include_predictions=include,
                    progress=progress,
                )
                bar.close()
                self.stdout.write(
                    f"wrote {output}: {built.info.size} bytes, sha256 {built.info.sha256}, "
                    f"{len(built.info.members) + 1} files (not recorded)"
                )
                return
            if opts["if_changed"]:
                snapshot = make_snapshot_if_changed(dataset, include_predictions=include, background=False)
                if snapshot is None:
                    bar.close()
                    self.stdout.write(f"{dataset.slug}: unchanged since the last snapshot; nothing made")
                    return
            else:
                snapshot = create_snapshot(
                    dataset=dataset, include_predictions=include, state_hash=dataset_state_hash(dataset)
                )
                snapshot = build_snapshot(snapshot=snapshot, progress=progress)
        except ArchiveError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        if snapshot.status != snapshot.Status.DONE:
            raise CommandError(f"snapshot {snapshot.number} is {snapshot.status}: {snapshot.error}")
        self.stdout.write(
            f"{dataset.slug} snapshot {snapshot.number}: {snapshot_path(snapshot)}, "
            f"{snapshot.size} bytes, sha256 {snapshot.sha256}"
        )
        if output is not None:
            shutil.copyfile(snapshot_path(snapshot), output)
            self.stdout.write(f"copied to {output}")
