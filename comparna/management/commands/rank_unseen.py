"""``manage.py rank_unseen [--dataset NAME]``: compute the leakage-aware rankings now (as the nightly job
does) and print, per method, its full and unseen rank, the move and why a method is not ranked."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from comparna.models import Dataset, RankingSnapshot
from comparna.services.leakage import recompute_unseen


class Command(BaseCommand):
    help = "Compute the unseen rankings (comparna.services.leakage) and print full vs unseen ranks."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", metavar="NAME", help="dataset slug (default: all)")
        parser.add_argument("--seed", type=int, default=None)

    def handle(self, *args, dataset=None, seed=None, **options):
        ds = None
        if dataset:
            ds = Dataset.objects.filter(slug=dataset).first()
            if ds is None:
                raise CommandError(f"unknown dataset {dataset!r}")
        for row, new in recompute_unseen(dataset=ds, seed=seed):
            r = row.report
            full = r.get("full_ranks", {})
            snap = RankingSnapshot.objects.filter(pk=r.get("full_snapshot")).first()
            full_rows = {m["method"]: m for m in (snap.report.get("methods", []) if snap else [])}
            unseen = {m["method"]: m for m in r.get("methods", [])}
            screened = ", ".join(r.get("screened_against", [])) or "none"
            self.stdout.write(
                f"\n{row.dataset.slug} ({row.definition}): unseen ranking #{row.pk}{' (new)' * new}, "
                f"identity < {r.get('identity_threshold')} to {screened}"
            )
            self.stdout.write(f"{'method':34s}{'full':>5s}{'unseen':>7s}{'move':>6s}{'targets':>8s}{'unseen':>7s}"
                              f"{'MCC':>7s}{'unseen':>7s}  not ranked because")
            for name in sorted(full, key=lambda n: (full[n], n)):
                u, info = unseen.get(name), r.get("per_method", {}).get(name, {})
                move = f"{full[name] - u['rank']:+d}" if u else "-"
                fm = full_rows.get(name, {})
                self.stdout.write(
                    f"{name:34s}{full[name]:>5d}{(u['rank'] if u else '-'):>7}{move:>6s}"
                    f"{fm.get('targets', '-'):>8}{info.get('unseen_predicted', '-'):>7}"
                    f"{fm.get('mcc', float('nan')):>7.3f}{(u['mcc'] if u else float('nan')):>7.3f}  "
                    f"{r.get('not_ranked', {}).get(name, '')}"
                )
            if r.get("unavailable"):
                self.stdout.write("declared sets not available locally: " + "; ".join(r["unavailable"]))
