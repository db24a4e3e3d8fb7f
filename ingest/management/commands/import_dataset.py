"""``python manage.py import_dataset NAME [PATH]``: import a declared benchmark set (ingest.datasets)."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingest.datasets.catalogue import DECLARATIONS
from ingest.services.datasets import import_dataset


class Command(BaseCommand):
    help = (
        "Import a declared dataset (" + ", ".join(sorted(DECLARATIONS)) + ") from its shipped source under "
        "data/ (checked against the declared sha256) or from PATH (same format), with the declared filters, "
        "CD-HIT-EST redundancy removal and subsets. Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", help="Declared dataset name.")
        parser.add_argument("path", nargs="?", type=Path, help="Another source file of the declared format.")
        parser.add_argument("--list", action="store_true", help="List the declared datasets and exit.")
        parser.add_argument("--no-progress", action="store_true", help="Do not draw progress bars.")

    def handle(self, *args, name: str | None, path: Path | None, list: bool, no_progress: bool, **options):
        if list or not name:
            for decl in DECLARATIONS.values():
                self.stdout.write(f"{decl.name:12} {decl.title}: {decl.source} ({decl.fmt}); {decl.citation}")
            if not name and not list:
                raise CommandError("name a dataset to import")
            return
        if name not in DECLARATIONS:
            known = ", ".join(sorted(DECLARATIONS))
            raise CommandError(f"no dataset declared as {name!r}; declared: {known}")
        run_import(self, name=name, path=path, no_progress=no_progress)


def run_import(command: BaseCommand, *, name: str, path: Path | None, no_progress: bool) -> None:
    """Run an import with progress bars and print its summary (shared with ``import_rnastrand``)."""
    if path is not None and not path.exists():
        raise CommandError(f"{path} does not exist")
    bars: dict[str, tqdm] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if no_progress:
            return
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=stage, unit="entry", file=command.stderr._out)
        if total != bar.total:
            bar.total = total
        bar.update(done - bar.n)

    t0 = time.monotonic()
    try:
        run = import_dataset(name=name, path=path, progress=progress)
    except Exception as exc:
        raise CommandError(f"import failed: {exc}") from exc
    finally:
        for bar in bars.values():
            bar.close()
    s = run.summary
    command.stdout.write(
        f"{name} import {run.status} in {time.monotonic() - t0:.1f} s: {s.get('created', 0)} new targets, "
        f"{s.get('already_present', 0)} already present"
    )
    for key, value in s.items():
        if key not in {"created", "already_present"}:
            command.stdout.write(f"  {key}: {value}")
