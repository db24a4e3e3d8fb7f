"""Mean runtime of catalogue methods on real RNA STRAND sequences of about 100, 300 and 1000 nt.

Each method runs through the real sandbox (``run_prediction`` + ``SandboxRunner``, the path of a prediction
job), on the same ``--per-length`` sequences per length (the RNA STRAND entries made of A/C/G/U whose
length is closest to the target, within 10 %), one job after another. The figure is the runner's recorded
wall time per job (interpreter start, imports and model loading included), with the peak memory the
cgroup saw. Lengths above a spec's ``max_length`` are reported as such (not run). Take figures under the
lock and note the load: ``flock /tmp/comparna-bench.lock .venv/bin/python scripts/time_methods.py``.

Usage: python scripts/time_methods.py [--methods NAME ...] [--lengths 100 300 1000] [--per-length 3]
       [--json FILE] [--ignore-limits]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from predictors.catalogue import CATALOGUE  # noqa: E402
from predictors.core.runners import SandboxRunner, run_prediction  # noqa: E402
from tests.support.strand_sequences import pick_by_length, strand_sequences  # noqa: E402

ARCHIVE = Path(os.environ.get("COMPARNA_RNASTRAND", REPO / "data" / "rna_strand_v2.0_bpseq.tar.gz"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", help="catalogue names (default: every single-sequence spec)")
    parser.add_argument("--lengths", nargs="*", type=int, default=[100, 300, 1000])
    parser.add_argument("--per-length", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--ignore-limits", action="store_true", help="run lengths above max_length too (to measure them)"
    )
    args = parser.parse_args()
    sequences = strand_sequences(ARCHIVE)
    chosen = {n: pick_by_length(sequences, n, args.per_length) for n in args.lengths}
    specs = [
        s for s in CATALOGUE if s.input_kind == "single" and (not args.methods or s.name in args.methods)
    ]
    load_before = os.getloadavg()
    rows = []
    runner = SandboxRunner()
    for spec in specs:
        row = {"method": spec.name, "version": spec.version, "licence": spec.licence, "by_length": {}}
        for length, entries in chosen.items():
            if length > spec.max_length * 1.1 and not args.ignore_limits:
                row["by_length"][length] = {"status": f"above max_length {spec.max_length}"}
                continue
            run_spec = replace(spec, max_length=10**5) if args.ignore_limits else spec
            times, memory, statuses = [], [], []
            for entry in entries:
                result = run_prediction(run_spec, sequences[entry], runner=runner)
                statuses.append(result.status)
                if result.status == "ok":
                    times.append(result.runtime_s)
                    memory.append(result.resources.get("peak_memory_mb"))
            row["by_length"][length] = {
                "entries": {e: len(sequences[e]) for e in entries},
                "statuses": statuses,
                "mean_s": round(statistics.mean(times), 3) if times else None,
                "max_s": round(max(times), 3) if times else None,
                "peak_memory_mb": max((m for m in memory if m is not None), default=None),
            }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    report = {
        "lengths": args.lengths,
        "per_length": args.per_length,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "rows": rows,
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    header = "| method | version | " + " | ".join(f"{n} nt (s)" for n in args.lengths) + " |"
    print(header)
    print("|" + "---|" * (2 + len(args.lengths)))
    for row in rows:
        cells = []
        for n in args.lengths:
            cell = row["by_length"][n]
            if cell.get("mean_s") is not None:
                cells.append(f"{cell['mean_s']:.2f}")
            else:
                cells.append(cell.get("status") or "/".join(cell.get("statuses", [])))
        print(f"| {row['method']} | {row['version']} | " + " | ".join(cells) + " |")
    print(f"\nload before {load_before}, after {report['load_after']}")


if __name__ == "__main__":
    main()
