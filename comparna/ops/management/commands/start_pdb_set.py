"""``manage.py start_pdb_set``: on start, have a worker poll the RCSB now (not at beat's Thursday poll).

Sends :func:`comparna.ops.tasks.start_pdb_set_task` and returns at once (``--wait``: do it here instead and
print the outcome). Nothing happens once the PDB set has begun.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start the PDB set: poll the RCSB since COMPARNA_PDB_BENCHMARK_START if it answers."

    def add_arguments(self, parser):
        parser.add_argument("--wait", action="store_true", help="ask the RCSB here and print the outcome")

    def handle(self, *args, wait: bool = False, **options):
        if wait:
            from comparna.ops.pdb_start import start_pdb_set

            self.stdout.write(start_pdb_set())
            return
        from comparna.ops.tasks import start_pdb_set_task

        start_pdb_set_task.apply_async(queue="default")
        self.stdout.write("sent: a worker asks the RCSB and starts the PDB set if it answers")
