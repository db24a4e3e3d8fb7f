"""``manage.py rank``: run the CompaRNA ranking engine on demand.

``--counts FILE.csv`` runs the pure engine on a CSV of counts (no database); an optional ``family`` column
gives each target's family, the unit of the clustered test (without it every target is its own family).
Without ``--counts``, the rankings of the stored counts are recomputed (all datasets, or ``--dataset NAME``)
exactly as the scheduled job does: a new immutable snapshot is stored only for subsets whose inputs changed.

The verdicts shown are the primary, target-level ones (SCIENCE.md §5); ``--protocol 2013`` shows the
CompaRNA 2013 protocol's instead (to reproduce the paper's tables; labelled as such), and
``--compare-protocols`` prints the top 10 under both side by side, with the rank intervals.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from comparna.models import Dataset
from comparna.rna.ranking import (
    CountsFormatError,
    compare_protocols,
    format_comparison,
    format_report,
    protocol_view,
    rank_from_counts_csv,
)
from comparna.services.rankings import recompute_rankings


class Command(BaseCommand):
    help = (
        "Rank methods: target-level clustered Wilcoxon verdicts (or --protocol 2013), wins/losses/draws/?, "
        "rank intervals and the robustness ranking."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--counts",
            metavar="FILE.csv",
            help="CSV with columns method,target,tp,fn,fp,fp_compatible,tn (one row per prediction) and an "
            "optional family column (one label per target; without it every target is its own family)",
        )
        parser.add_argument("--dataset", metavar="NAME", help="dataset slug (database mode; default: all)")
        parser.add_argument("--subset", metavar="SLUG", help="only this subset (database mode)")
        parser.add_argument(
            "--seed",
            type=int,
            default=None,
            help="random seed of the resampling (default: 0 with --counts, else the RANKING_SEED setting)",
        )
        parser.add_argument(
            "--protocol",
            choices=("target", "2013"),
            default="target",
            help="verdicts to show: target (primary, target-level) or 2013 (the CompaRNA 2013 protocol)",
        )
        parser.add_argument(
            "--compare-protocols",
            action="store_true",
            help="print the top 10 under the target-level verdict and under the 2013 protocol side by side",
        )
        parser.add_argument("--top", type=int, default=10, help="rows of --compare-protocols (default 10)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args, **options):
        if options["seed"] is not None and options["seed"] < 0:
            raise CommandError("--seed must be non-negative")
        if options["top"] < 1:
            raise CommandError("--top must be positive")
        if options["counts"]:
            if options["dataset"] or options["subset"]:
                raise CommandError("--counts and --dataset/--subset exclude each other")
            report = self._from_counts(options["counts"], options["seed"] or 0)
            self._emit([(None, report)], options)
            return
        dataset = None
        if options["dataset"]:
            dataset = Dataset.objects.filter(slug=options["dataset"]).first()
            if dataset is None:
                known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none"
                raise CommandError(f"unknown dataset {options['dataset']!r} (known: {known})")
        results = recompute_rankings(dataset=dataset, seed=options["seed"])
        if options["subset"]:
            results = [(snap, new) for snap, new in results if snap.subset.slug == options["subset"]]
            if not results:
                raise CommandError(f"no subset {options['subset']!r} ranked")
        self._emit([((snap, new), snap.report) for snap, new in results], options)

    def _from_counts(self, path: str, seed: int) -> dict:
        try:
            return rank_from_counts_csv(path, seed)
        except CountsFormatError as error:
            raise CommandError(f"{path}: {error}") from error
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from error

    def _emit(self, items, options) -> None:
        """Print every report under the chosen protocol (or both side by side), as a table or JSON."""
        out = []
        for where, report in items:
            head = {}
            if where is not None:
                snap, new = where
                head = {
                    "dataset": snap.dataset.slug,
                    "subset": snap.subset.slug,
                    "definition": snap.definition,
                    "snapshot": snap.pk,
                    "new": new,
                    "computed_at": snap.computed_at.isoformat(),
                    "seed": snap.seed,
                }
            if options["compare_protocols"]:
                rows = compare_protocols(report, top=options["top"])
                out.append({**head, "clusters": report.get("clusters"), "top": rows})
                if not options["json"]:
                    self._title(head)
                    self.stdout.write(format_comparison(rows))
                continue
            view = protocol_view(report, options["protocol"])
            if view is None:
                raise CommandError(
                    f"this report has no {options['protocol']} view (a snapshot stored before issue 27); "
                    "recompute it"
                )
            if where is None:
                out.append(view)
            else:
                keys = ("methods", "verdicts", "protocol", "protocol_label")
                out.append({**head, **{k: view[k] for k in keys}})
            if not options["json"]:
                self._title(head)
                if view["methods"]:
                    self.stdout.write(format_report(view))
        if options["json"]:
            payload = out[0] if options["counts"] else out
            self.stdout.write(json.dumps(payload, indent=1))

    def _title(self, head: dict) -> None:
        if head:
            self.stdout.write(
                f"== {head['dataset']}/{head['subset']} ({head['definition']}) snapshot #{head['snapshot']} "
                f"{'new' if head['new'] else 'unchanged'}, seed {head['seed']}"
            )
