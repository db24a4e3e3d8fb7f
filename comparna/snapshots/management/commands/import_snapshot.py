"""Load a snapshot archive into an empty CompaRNA and check that its rankings are reproduced exactly."""

from __future__ import annotations

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

    def handle(self, *args, **opts):
        bar = tqdm(total=0, unit="file", disable=None, file=self.stderr._out)

        def progress(stage: str, done: int, total: int) -> None:
            bar.total, bar.n = total, done
            bar.set_description(stage)
            bar.refresh()

        try:
            result = import_snapshot(path=opts["path"], progress=progress)
        except SnapshotError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
        self.stdout.write(
            f"imported dataset {result.dataset.slug} (version {result.dataset.version}): {counts}"
        )
        if opts["no_rank"] or not result.rankings:
            return
        rows = reproduce_rankings(dataset=result.dataset, rankings=result.rankings)
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
