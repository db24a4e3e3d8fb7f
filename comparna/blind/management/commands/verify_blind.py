"""``manage.py verify_blind [--week DATE] [--commitment FILE] [--json]``: check blind commitments.

For every committed week (or one): the commitment file against its published SHA-256 (or a copy obtained
independently, ``--commitment``), and every committed prediction's current stored content against the hash it
was committed with. Exit status 1 when anything differs; each difference is named.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from comparna.blind.freezing import verify_week
from comparna.blind.models import BlindWeek


class Command(BaseCommand):
    help = "Verify the blind track's commitments against the stored predictions (exit 1 on any difference)."

    def add_arguments(self, parser):
        parser.add_argument("--week", help="release date (YYYY-MM-DD) of the week to check; default all")
        parser.add_argument("--commitment", help="a copy of the week's commitment file to check instead")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, week=None, commitment=None, as_json=False, **options):
        weeks = BlindWeek.objects.exclude(commitment_sha256="").order_by("release_date")
        if week:
            try:
                day = dt.date.fromisoformat(week)
            except ValueError:
                raise CommandError(f"--week: not a date: {week!r}") from None
            weeks = weeks.filter(release_date=day)
            if not weeks.exists():
                raise CommandError(f"no committed blind week for the release of {day}")
        elif commitment:
            raise CommandError("--commitment needs --week")
        copy = None
        if commitment:
            try:
                copy = Path(commitment).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read {commitment}: {exc}") from None
        reports = [verify_week(w, commitment=copy) for w in weeks]
        if as_json:
            self.stdout.write(json.dumps([r.as_dict() for r in reports], indent=2))
        else:
            for r in reports:
                state = "OK" if r.ok else "DIFFERS"
                self.stdout.write(f"week {r.week}: {state}: {r.matching} of {r.committed} committed "
                                  f"predictions match their hash")
                for p in r.problems:
                    where = "commitment file"
                    if "prediction" in p:
                        where = f"prediction {p['prediction']} ({p['method']} on {p['target']})"
                    self.stdout.write(f"  {where}: {p['detail']}")
        if any(not r.ok for r in reports):
            sys.exit(1)

