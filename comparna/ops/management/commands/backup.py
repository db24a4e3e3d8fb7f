"""``manage.py backup DEST``: the database and the image and snapshot stores into a new directory."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from comparna.ops.backup import BackupError, create_backup


class Command(BaseCommand):
    help = "Back up the database (pg_dump -Fc or SQLite's backup API), images and snapshots, with checksums."

    def add_arguments(self, parser):
        parser.add_argument("dest", type=Path, help="a new (or empty) directory")

    def handle(self, *args, dest: Path, **options):
        started = time.monotonic()
        try:
            manifest = create_backup(dest=dest, progress=lambda m: self.stderr.write(f"  {m}"))
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        size = sum(e["size"] for e in manifest["files"].values())
        self.stdout.write(
            f"backup of {len(manifest['files'])} files, {size / 2**20:.1f} MiB in {dest} "
            f"({time.monotonic() - started:.1f} s)"
        )
