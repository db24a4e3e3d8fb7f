"""Every benchmark in bench/ still starts, runs at its smoke size and reports the same way (issue 19).

Each ``bench/bench_*.py`` (found by globbing, so a new benchmark is covered without editing this file) runs
in a subprocess from a neutral working directory with ``--smoke --json``; its stdout must be exactly one
JSON object in the shared harness's schema, with every correctness check passed and finite, positive costs
and ratios for the system, its baseline and its limit.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHES = sorted(p.name for p in (REPO / "bench").glob("bench_*.py"))
#: Benchmarks that start PostgreSQL, Redis, Celery workers or gunicorn.
STACK = {"bench_workers.py", "bench_load.py", "bench_throughput.py", "bench_page_weight.py", "bench_scale.py"}


def _run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_every_benchmark_is_found():
    assert {"bench_metrics.py", "bench_ranking.py", "bench_runner.py", "bench_workers.py", "bench_load.py",
            "bench_annotation.py"} <= set(BENCHES)


@pytest.mark.parametrize("name", BENCHES)
def test_help_and_bad_arguments(name, tmp_path):
    script = str(REPO / "bench" / name)
    shown = _run([script, "--help"], tmp_path, 120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "--smoke" in shown.stdout and "--json" in shown.stdout
    # --help must not run the benchmark: nothing but the usage text is printed
    assert shown.stdout.lstrip().startswith("usage:")
    refused = _run([script, "--smoke", "--no-such-option"], tmp_path, 120)
    assert refused.returncode == 2
    assert "unrecognized arguments: --no-such-option" in refused.stderr


def _positive(x) -> bool:
    return isinstance(x, int | float) and math.isfinite(x) and x > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.e2e] if n in STACK else []) for n in BENCHES]
)
def test_smoke_run_reports_ratios(name, tmp_path):
    proc = _run([str(REPO / "bench" / name), "--smoke", "--json"], tmp_path, 600)
    # a failed check exits 1 with the report (checks, notes) on stdout; a crash leaves its traceback on stderr
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stderr[-3000:]}\n{proc.stdout[-3000:]}"
    report = json.loads(proc.stdout)  # exactly one JSON object: anything else on stdout fails here
    assert report["bench"] == name.removeprefix("bench_").removesuffix(".py")
    assert report["mode"] == "smoke" and report["params"]["smoke"] is True
    assert report["checks"], "a benchmark must check that what it timed computed the right thing"
    assert report["ok"] is True and all(report["checks"].values()), report["checks"]
    assert report["machine"]["cores"] >= 1 and len(report["machine"]["load_before"]) == 3
    assert report["comparisons"]
    for row in report["comparisons"]:
        assert row["unit"] and row["system_is"] and row["limit_is"]
        assert _positive(row["system"]) and _positive(row["limit"]), row
        assert math.isclose(row["ratio_to_limit"], row["system"] / row["limit"], rel_tol=1e-9)
        if row["baseline"] is not None:
            assert _positive(row["baseline"]) and row["baseline_is"], row
            assert math.isclose(row["ratio_to_baseline"], row["system"] / row["baseline"], rel_tol=1e-9)
    assert any(row["baseline"] is not None for row in report["comparisons"]), "no naive baseline measured"
