"""Re-score a dataset's stored predictions against its current references (after a reference changes)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from comparna.models import Dataset, PairDefinition
from comparna.services.rescoring import rescore_dataset


class Command(BaseCommand):
    help = (
        "Recompute the counts and scores of every successful prediction of a dataset against the current "
        "reference structures (idempotent: rows are written only where a value changes). Rankings are not "
        "recomputed; run `rank` afterwards."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="dataset slug, e.g. rnastrand or pdb")
        parser.add_argument(
            "--definition",
            action="append",
            choices=[d.value for d in PairDefinition],
            help="pair definition to re-score (repeatable; default: all stored references)",
        )
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")

    def handle(self, *args, **options):
        try:
            dataset = Dataset.objects.get(slug=options["dataset"])
        except Dataset.DoesNotExist:
            known = ", ".join(Dataset.objects.order_by("slug").values_list("slug", flat=True)) or "none"
            raise CommandError(f"no dataset {options['dataset']!r} (known: {known})") from None
        bar = tqdm(total=0, unit="target", desc=f"re-scoring {dataset.slug}", disable=None,
                   file=self.stderr._out)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            report = rescore_dataset(dataset=dataset, definitions=options["definition"], progress=progress)
        finally:
            bar.close()
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
            return
        self.stdout.write(
            f"{report.dataset}: {report.targets} targets, {report.predictions} ok predictions, "
            f"{report.compared} comparisons: {report.created} created, {report.updated} updated, "
            f"{report.unchanged} unchanged, {report.deleted} deleted"
        )
        for error in report.errors:
            self.stderr.write(f"kept old scores: {error}")
