"""Per-job overhead of the sandbox runner versus the bare program in a plain subprocess.

For a fixed slice of RNA STRAND (the first N entries, by file name, of length 40..400 with only ACGU)
each sequence is run three ways, interleaved so that machine load hits them equally:

- ``bare``: ``subprocess.run`` of the catalogue command, no limits, no isolation;
- ``local``: :class:`LocalRunner` (rlimits, cgroups, timeout, output capture, parsing; no isolation);
- ``sandbox``: :class:`SandboxRunner` (all of the above inside bubblewrap as the unprivileged sandbox uid).

Usage::

    .venv/bin/python bench/bench_runner.py [--n 50] [--method RNAfold-MFE] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from comparna.rna.formats import read_bpseq  # noqa: E402
from predictors.catalogue import get_spec  # noqa: E402
from predictors.core.runners import LocalRunner, SandboxRunner, format_argv, run_prediction  # noqa: E402
from predictors.core.spec import PredictorSpec  # noqa: E402

ARCHIVE = REPO.parent / "shared" / "data" / "rna_strand_v2.0_bpseq.tar.gz"


def strand_slice(n: int, lo: int = 40, hi: int = 400) -> list[tuple[str, str]]:
    """The first ``n`` RNA STRAND entries (sorted by name) with lo <= length <= hi and only ACGU."""
    out = []
    with tarfile.open(ARCHIVE) as tar:
        members = sorted((m for m in tar if m.isfile() and m.name.endswith(".bpseq")), key=lambda m: m.name)
        for m in members:
            seq, _ = read_bpseq(tar.extractfile(m).read().decode())
            seq = seq.upper()
            if lo <= len(seq) <= hi and set(seq) <= set("ACGU"):
                out.append((Path(m.name).stem, seq))
                if len(out) == n:
                    break
    return out


def bare_run(spec, seq: str) -> float:
    with tempfile.TemporaryDirectory(prefix="comparna-bench-") as d:
        fasta = Path(d) / "input.fa"
        fasta.write_text(f">q\n{seq}\n")
        argv = format_argv(
            spec, sequence=seq, workdir=d, fasta=str(fasta), alignment=None, python=sys.executable
        )
        start = time.monotonic()
        subprocess.run(argv, cwd=d, capture_output=True, check=True, env={"PYTHONPATH": str(REPO)})
        return time.monotonic() - start


def summarise(times: list[float]) -> dict[str, float]:
    return {
        "mean_s": round(statistics.mean(times), 4),
        "median_s": round(statistics.median(times), 4),
        "min_s": round(min(times), 4),
        "max_s": round(max(times), 4),
        "jobs_per_minute": round(60 / statistics.mean(times), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--method", default="RNAfold-MFE")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = get_spec(args.method)
    seqs = strand_slice(args.n)
    runners = {"local": LocalRunner(), "sandbox": SandboxRunner()}
    # Wall time per job as seen by a worker (including work dir set-up and parsing for the runners).
    times: dict[str, list[float]] = {"bare": [], "local": [], "sandbox": []}
    failures = 0
    for _name, seq in seqs:
        times["bare"].append(bare_run(spec, seq))
        for key, runner in runners.items():
            start = time.monotonic()
            result = run_prediction(spec, seq, runner=runner)
            times[key].append(time.monotonic() - start)
            failures += result.status != "ok"
    report = {
        "method": spec.name,
        "sequences": len(seqs),
        "lengths": [min(len(s) for _, s in seqs), max(len(s) for _, s in seqs)],
        "failures": failures,
        **{k: summarise(v) for k, v in times.items()},
    }
    # Fixed cost, isolated from the folding time: a program that only prints a structure.
    trivial = PredictorSpec(name="echo", program="echo", version="0", argv=("/bin/echo", "{sequence}"))
    fixed: dict[str, list[float]] = {"bare": [], "local": [], "sandbox": []}
    for _name, seq in seqs[:20]:
        fixed["bare"].append(bare_run(trivial, seq))
        for key, runner in runners.items():
            start = time.monotonic()
            run_prediction(trivial, seq, runner=runner)
            fixed[key].append(time.monotonic() - start)
    report["fixed_cost_trivial_program"] = {k: summarise(v) for k, v in fixed.items()}
    report["sandbox_overhead_mean_s"] = round(report["sandbox"]["mean_s"] - report["bare"]["mean_s"], 4)
    report["sandbox_overhead_median_s"] = round(report["sandbox"]["median_s"] - report["bare"]["median_s"], 4)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    lo, hi = report["lengths"]
    print(f"{spec.name} on {len(seqs)} RNA STRAND sequences ({lo}-{hi} nt), {failures} failures")
    for k in ("bare", "local", "sandbox"):
        r = report[k]
        per_min = r["jobs_per_minute"]
        print(f"  {k:8s} mean {r['mean_s']:.3f} s  median {r['median_s']:.3f} s  ({per_min} jobs/min)")
    fc = report["fixed_cost_trivial_program"]
    print(
        f"  fixed cost of a trivial program: bare {fc['bare']['mean_s']:.3f} s, "
        f"local {fc['local']['mean_s']:.3f} s, sandbox {fc['sandbox']['mean_s']:.3f} s (means)"
    )
    print(
        f"  sandbox overhead per job: mean {report['sandbox_overhead_mean_s']:+.3f} s, "
        f"median {report['sandbox_overhead_median_s']:+.3f} s"
    )


if __name__ == "__main__":
    main()
