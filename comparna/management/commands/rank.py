"""``manage.py rank``: run the CompaRNA ranking engine on demand.

``--counts FILE.csv`` runs the pure engine on a CSV of counts (no database). Without it, the rankings of the
stored counts are recomputed (all datasets, or ``--dataset NAME``) exactly as the nightly job does: a new
immutable snapshot is stored only for subsets whose inputs changed.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from comparna.models import Dataset
from comparna.rna.ranking import CountsFormatError, format_report, rank_from_counts_csv
from comparna.services.rankings import recompute_rankings


class Command(BaseCommand):
    help = "Rank methods: pairwise Wilcoxon verdicts, wins/losses/draws/? and the robustness ranking."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--counts",
            metavar="FILE.csv",
            help="CSV with columns method,target,tp,fn,fp,fp_compatible,tn (one row per prediction)",
        )
        parser.add_argument("--dataset", metavar="NAME", help="dataset slug (database mode; default: all)")
        parser.add_argument(
            "--seed",
            type=int,
            default=None,
            help="random seed of the subsampling (default: 0 with --counts, else the RANKING_SEED setting)",
        )
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args, **options):
        if options["seed"] is not None and options["seed"] < 0:
            raise CommandError("--seed must be non-negative")
        if options["counts"]:
            if options["dataset"]:
                raise CommandError("--counts and --dataset exclude each other")
            report = self._from_counts(options["counts"], options["seed"] or 0)
        else:
            return self._from_database(options["dataset"], options["seed"], options["json"])
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

    def _from_database(self, slug: str | None, seed: int | None, as_json: bool) -> None:
        dataset = None
        if slug:
            dataset = Dataset.objects.filter(slug=slug).first()
            if dataset is None:
                known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none"
                raise CommandError(f"unknown dataset {slug!r} (known: {known})")
        results = recompute_rankings(dataset=dataset, seed=seed)
        if as_json:
            out = [
                {
                    "dataset": snap.dataset.slug,
                    "subset": snap.subset.slug,
                    "definition": snap.definition,
                    "snapshot": snap.pk,
                    "new": new,
                    "computed_at": snap.computed_at.isoformat(),
                    "seed": snap.seed,
                    "methods": snap.report["methods"],
                    "verdicts": snap.report["verdicts"],
                }
                for snap, new in results
            ]
            self.stdout.write(json.dumps(out, indent=1))
            return
        for snap, new in results:
            self.stdout.write(
                f"== {snap.dataset.slug}/{snap.subset.slug} ({snap.definition}) snapshot #{snap.pk} "
                f"{'new' if new else 'unchanged'}, seed {snap.seed}"
            )
            if snap.report["methods"]:
                self.stdout.write(format_report(snap.report))
