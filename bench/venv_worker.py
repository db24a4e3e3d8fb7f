"""A warm wrapper in another interpreter (a method's own virtualenv), for the benchmarks' in-process limit.

Run as ``<venv>/bin/python bench/venv_worker.py MODULE ARGS...`` with the repository on ``PYTHONPATH``:
imports ``MODULE`` once, then for every FASTA path read from stdin (one per line) calls its ``main([*ARGS,
path])`` with Python's stdout captured, and answers one JSON line ``{"out": ..., "error": ...}`` on the
original stdout. Anything else the program prints goes to stderr. Standard library only: it runs in
interpreters that have none of CompaRNA's dependencies. Used by :func:`bench.workloads.inprocess_predictor`.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
import traceback


def serve(module_name: str, args: list[str]) -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # compiled code writing to fd 1 cannot corrupt the answers
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), line_buffering=True)
    module = importlib.import_module(module_name)
    for line in sys.stdin:
        path = line.rstrip("\n")
        out = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(out):
                module.main([*args, path])
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = f"exit {exc.code}"
        except Exception:  # noqa: BLE001 - reported to the parent, which raises it
            error = traceback.format_exc(limit=5)
        answers.write(json.dumps({"out": out.getvalue(), "error": error}) + "\n")


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
