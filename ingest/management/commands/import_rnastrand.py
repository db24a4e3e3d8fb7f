"""``python manage.py import_rnastrand PATH``: import the RNA STRAND static benchmark."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingest.services.strand import import_rnastrand


class Command(BaseCommand):
    help = "Import RNA STRAND v2.0 (tarball or directory of BPSEQ files) with filters and CD-HIT-EST."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--no-progress", action="store_true", help="Do not draw progress bars.")

    def handle(self, *args, path: Path, no_progress: bool, **options):
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        bars: dict[str, tqdm] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if no_progress:
                return
            bar = bars.get(stage)
            if bar is None:
                bar = bars[stage] = tqdm(total=total, desc=stage, unit="entry", file=self.stderr._out)
            bar.update(done - bar.n)

        try:
            run = import_rnastrand(path=path, progress=progress)
        except Exception as exc:
            raise CommandError(f"import failed: {exc}") from exc
        finally:
            for bar in bars.values():
                bar.close()
        s = run.summary
        self.stdout.write(f"RNA STRAND import {run.status}: {s.get('created', 0)} new targets, "
                          f"{s.get('already_present', 0)} already present")
        for key, value in s.items():
            if key not in {"created", "already_present"}:
                self.stdout.write(f"  {key}: {value}")
