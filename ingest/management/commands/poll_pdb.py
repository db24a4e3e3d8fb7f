"""``python manage.py poll_pdb [--since DATE] [--until DATE]``: poll the RCSB for new RNA entries."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingest.services.pdb import next_poll_window, poll_pdb


class Command(BaseCommand):
    help = "Search the RCSB for RNA entries released in a window, annotate the new ones, create targets."

    def add_arguments(self, parser):
        parser.add_argument("--since", type=dt.date.fromisoformat, help="First release date (YYYY-MM-DD).")
        parser.add_argument("--until", type=dt.date.fromisoformat, help="Last release date (default today).")
        parser.add_argument("--backfill", action="store_true",
                            help="Force: chains join the novelty reference set instead of the benchmark.")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, since=None, until=None, backfill=False, no_progress=False, **options):
        default_since, today = next_poll_window()
        since, until = since or default_since, until or today
        if since > until:
            raise CommandError(f"empty window: {since} is after {until}")
        bar = None

        def progress(stage, done, total):
            nonlocal bar
            if no_progress:
                return
            if bar is None:
                bar = tqdm(total=total, desc=stage, unit="entry", file=self.stderr._out)
            bar.update(done - bar.n)

        try:
            run = poll_pdb(since=since, until=until, backfill=True if backfill else None, progress=progress)
        finally:
            if bar is not None:
                bar.close()
        self.stdout.write(
            f"poll {run.since}..{run.until} {run.status}: {run.found} found, {run.new} new, {run.skipped} "
            f"skipped, {run.failed} failed, {run.targets_created} targets created"
            + (" (backfill: novelty reference set)" if run.backfill else "")
        )
        for entry in run.entries.exclude(status="ok"):
            self.stdout.write(f"  {entry.pdb_id}: {entry.status} — {entry.reason}")
        if run.status != run.Status.DONE:
            raise CommandError(run.error or "poll failed")
