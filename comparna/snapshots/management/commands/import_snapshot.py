"""Load a snapshot archive into an empty CompaRNA and check that its rankings are reproduced exactly.

The archive is untrusted: its method specs are validated and their fingerprints recomputed, and imported
method versions are never run (see comparna.snapshots.restore). ``--sha256`` pins the expected archive.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from comparna.snapshots.common import SnapshotError
from comparna.snapshots.restore import import_snapshot, reproduce_rankings


class Command(BaseCommand):
    help = (
        "Import a snapshot archive into an EMPTY database (refuses otherwise), then recompute its "
        "rankings with their recorded seeds and compare them with the archived ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--no-rank", action="store_true", help="skip recomputing the rankings")
        parser.add_argument(
            "--sha256", help="the expected SHA-256 of the archive file (as published with it); refuse others"
        )

    def handle(self, *args, **opts):
        sha = opts["sha256"]
        if sha is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", sha):
            raise CommandError(f"--sha256 must be 64 hexadecimal digits, got {sha!r}")
        if not opts["path"].is_file():
            raise CommandError(f"{opts['path']}: no such file")
        bar = tqdm(total=0, unit="file", disable=None, file=self.stderr._out)

        def progress(stage: str, done: int, total: int) -> None:
            bar.total, bar.n = total, done
            bar.set_description(stage)
            bar.refresh()

        try:
            result = import_snapshot(path=opts["path"], progress=progress, expected_sha256=sha)
        except SnapshotError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
        self.stdout.write(
            f"imported dataset {result.dataset.slug} (version {result.dataset.version}): {counts}"
        )
        self.stdout.write(
            "  method versions from an archive are not run: register a method again (admin, with a test run) "
            "to run it"
        )
        if opts["no_rank"] or not result.rankings:
            return
        try:
            rows = reproduce_rankings(dataset=result.dataset, rankings=result.rankings)
        except SnapshotError as exc:
            raise CommandError(str(exc)) from exc
        bad = []
        for row in rows:
            if not row["comparable"]:
                verdict = "not comparable (the archived ranking was computed on other data)"
            elif row["identical"]:
                verdict = "reproduced exactly"
            else:
                verdict = "DIFFERENT"
                bad.append(row)
            self.stdout.write(f"  ranking {row['subset']}/{row['definition']} seed {row['seed']}: {verdict}")
        if bad:
            raise CommandError(f"{len(bad)} ranking(s) differ from the archived ones")
