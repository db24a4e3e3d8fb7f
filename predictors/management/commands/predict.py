"""``python manage.py predict``: list active methods or run one on a sequence through the workers' runner."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from comparna.rna.formats import write_dot_bracket
from comparna.rna.structure import StructureFormatError
from predictors.core.runners import run_prediction
from predictors.models import Method
from predictors.services import spec_from_version


class Command(BaseCommand):
    help = "List active methods (--list) or run one method on a sequence (--method NAME --sequence SEQ)."

    def add_arguments(self, parser):
        parser.add_argument("--list", action="store_true", dest="list_methods")
        parser.add_argument("--method")
        parser.add_argument("--sequence")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, list_methods=False, method=None, sequence=None, as_json=False, **options):
        if list_methods:
            names = [m.name for m in Method.objects.filter(active=True).order_by("name")]
            self.stdout.write(_dumps(names) if as_json else "\n".join(names))
            return
        if not method or not sequence:
            raise CommandError("give --list, or --method NAME and --sequence SEQ")
        # the public method of that name ("public" sorts after "development"), else an owner's (issue 36)
        m = Method.objects.filter(name=method).order_by("-visibility", "pk").first()
        if m is None or m.current_version is None:
            raise CommandError(f"unknown method {method!r}; run sync_predictors, or see --list")
        sequence = sequence.strip().upper().replace("T", "U")
        result = run_prediction(spec_from_version(m.current_version), sequence)
        structure = None
        if result.structure is not None:
            try:
                structure = write_dot_bracket(result.structure)
            except StructureFormatError:
                structure = None  # multiplets have no dot-bracket form; the pair list is exact
        out = {
            "method": m.name,
            "status": result.status,
            "structure": structure,
            "pairs": [list(p) for p in result.structure.sorted_pairs()] if result.structure else [],
            "runtime_s": result.runtime_s,
            "runner": result.runner,
        }
        if result.message:
            out["error"] = result.message
        if as_json:
            self.stdout.write(_dumps(out))
        else:
            for k, v in out.items():
                self.stdout.write(f"{k:10s} {v}")


def _dumps(obj) -> str:
    return json.dumps(obj)
