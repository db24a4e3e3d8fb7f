"""``python manage.py import_rnastrand [PATH]``: alias of ``import_dataset rnastrand [PATH]``."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from ingest.management.commands.import_dataset import run_import


class Command(BaseCommand):
    help = "Import RNA STRAND v2.0 (alias of `import_dataset rnastrand`): tarball or directory of BPSEQ."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", type=Path, help="Default: the declared archive under data/.")
        parser.add_argument("--no-progress", action="store_true", help="Do not draw progress bars.")

    def handle(self, *args, path: Path | None, no_progress: bool, **options):
        run_import(self, name="rnastrand", path=path, no_progress=no_progress)
