"""``manage.py rank``: run the CompaRNA ranking engine on demand.

``--counts FILE.csv`` runs the pure engine on a CSV of counts (no database); a ``--dataset`` mode that reads
the stored counts is added next to it.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from comparna.rna.ranking import CountsFormatError, format_report, rank_from_counts_csv


class Command(BaseCommand):
    help = "Rank methods: pairwise Wilcoxon verdicts, wins/losses/draws/? and the robustness ranking."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument(
            "--counts",
            metavar="FILE.csv",
            help="CSV with columns method,target,tp,fn,fp,fp_compatible,tn (one row per prediction)",
        )
        parser.add_argument("--seed", type=int, default=0, help="random seed of the subsampling (default 0)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args, **options):
        if options["seed"] < 0:
            raise CommandError("--seed must be non-negative")
        if options["counts"]:
            report = self._from_counts(options["counts"], options["seed"])
        else:
            raise CommandError("give --counts FILE.csv")
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=1))
        else:
            self.stdout.write(format_report(report))

    def _from_counts(self, path: str, seed: int) -> dict:
        try:
            return rank_from_counts_csv(path, seed)
        except CountsFormatError as error:
            raise CommandError(f"{path}: {error}") from error
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from error
