"""``manage.py healthcheck``: exit 0 when healthy, 1 otherwise (docker-compose healthchecks).

``--worker NAME`` (e.g. ``predict@$(hostname)``): that worker beat recently. ``--beat``: beat ticked recently.
``--ready``: every readiness check of ``/readyz``. Cheap: a few small queries, no scan.
"""

from __future__ import annotations

import json
import os

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from comparna.ops.health import check_beat, readiness, worker_alive


class Command(BaseCommand):
    help = "Exit 0 when the given worker, beat, or the whole deployment is healthy."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--worker", help="worker name, e.g. predict@HOSTNAME")
        group.add_argument("--beat", action="store_true", help="beat ticked within COMPARNA_BEAT_STALE_S")
        group.add_argument("--ready", action="store_true", help="every readiness check (as /readyz)")
        parser.add_argument("--stale-s", type=float, default=None, help="override the staleness window")

    def handle(self, *args, worker=None, beat=False, ready=False, stale_s=None, **options):
        if worker:
            stale = stale_s if stale_s is not None else float(os.environ.get("COMPARNA_WORKER_STALE_S", 300))
            if not worker_alive(name=worker, stale_s=stale):
                raise CommandError(f"worker {worker} has not beaten for {stale:.0f} s")
            self.stdout.write(f"worker {worker} alive")
            return
        if beat:
            stale = stale_s if stale_s is not None else float(os.environ.get("COMPARNA_BEAT_STALE_S", "300"))
            result = check_beat(stale_s=stale, now=timezone.now())
            if not result["ok"]:
                raise CommandError(f"beat has not ticked for {stale:.0f} s: {json.dumps(result)}")
            self.stdout.write("beat alive")
            return
        report = readiness()
        self.stdout.write(json.dumps(report))
        if not report["ok"]:
            raise CommandError("not ready")
