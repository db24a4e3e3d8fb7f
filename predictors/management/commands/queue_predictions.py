"""``python manage.py queue_predictions``: queue every active method on every target it has not run on."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from comparna.models import Target
from predictors.models import MethodVersion
from predictors.services import queue_predictions


class Command(BaseCommand):
    help = "Queue predictions of active methods on targets (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--method", action="append", help="Only this method (repeatable).")
        parser.add_argument("--dataset", help="Only targets of this dataset slug.")
        parser.add_argument("--max-length", type=int, help="Only targets up to this length.")

    def handle(self, *args, method=None, dataset=None, max_length=None, **options):
        versions = MethodVersion.objects.to_run()
        if method:
            versions = versions.filter(method__name__in=method)
        targets = Target.objects.all()
        if dataset:
            targets = targets.filter(dataset__slug=dataset)
        if max_length:
            targets = targets.filter(length__lte=max_length)
        n = queue_predictions(versions=versions, targets=targets)
        self.stdout.write(f"{n} predictions queued")
