"""Check a snapshot archive against its MANIFEST; exit status 0 only when every file is intact."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from comparna.snapshots.archive import verify_archive


class Command(BaseCommand):
    help = "Verify a snapshot archive: every file present, none extra, every SHA-256 as in its MANIFEST."
    # Needs neither the database nor the site: runs even where the project's checks would fail.
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--sha256", help="also require this SHA-256 of the whole archive file")

    def handle(self, *args, **opts):
        report = verify_archive(opts["path"], expected_sha256=opts["sha256"])
        if not report.ok:
            shown = report.problems[:20]
            more = len(report.problems) - len(shown)
            lines = "\n  ".join(shown) + (f"\n  ... and {more} more" if more > 0 else "")
            raise CommandError(
                f"{opts['path']} is NOT intact ({len(report.problems)} problem(s)):\n  {lines}"
            )
        self.stdout.write(f"{opts['path']}: OK, {report.files} files match the MANIFEST")
