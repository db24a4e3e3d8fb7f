"""``python manage.py sync_predictors``: sync the declared predictor catalogue to the database."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from predictors.services import sync_predictors


class Command(BaseCommand):
    help = "Sync the built-in predictor catalogue (one method per spec; a changed spec makes a new version)."

    def add_arguments(self, parser):
        parser.add_argument("--only", action="append", metavar="NAME",
                            help="Keep only these catalogue methods active (repeatable).")

    def handle(self, *args, only=None, **options):
        try:
            versions = sync_predictors(only=only)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        for v in versions:
            self.stdout.write(f"{v.method.name:32s} {v.program} {v.version}  [{v.fingerprint[:12]}]")
        self.stdout.write(f"{len(versions)} predictors in the catalogue")
