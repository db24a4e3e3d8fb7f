"""``manage.py restore SRC``: verify a backup's checksums, then replace the database and the stores with it.

Stop the workers, beat and the web server first: the restore replaces every table.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from comparna.ops.backup import BackupError, restore_backup, verify_backup


class Command(BaseCommand):
    help = "Restore a backup made by manage.py backup (checksums are verified before anything changes)."

    def add_arguments(self, parser):
        parser.add_argument("src", type=Path, help="the backup directory")
        parser.add_argument("--noinput", "--no-input", action="store_false", dest="interactive")
        parser.add_argument("--verify-only", action="store_true", help="check the checksums, change nothing")

    def handle(self, *args, src: Path, interactive: bool = True, verify_only: bool = False, **options):
        started = time.monotonic()
        try:
            if verify_only:
                manifest = verify_backup(src=src)
                self.stdout.write(f"backup {src} is intact ({len(manifest['files'])} files)")
                return
            if interactive:
                verify_backup(src=src)
                answer = input("This replaces the whole database, images and snapshots. Type 'yes': ")
                if answer.strip() != "yes":
                    raise CommandError("restore cancelled")
            manifest = restore_backup(src=src, progress=lambda m: self.stderr.write(f"  {m}"))
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"restored {src} (made {manifest['created_at']}) in {time.monotonic() - started:.1f} s; "
            "run manage.py migrate if this code is newer than the backup"
        )
