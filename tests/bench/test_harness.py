"""The shared benchmark harness: smoke sizes, explicit arguments, ratios and a clean JSON stdout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench.harness import Bench, best_of, interleaved, percentile

REPO = Path(__file__).resolve().parents[2]


def make() -> Bench:
    bench = Bench("demo", "Demo benchmark.\n\nMore text.", smoke={"n": 3})
    bench.parser.add_argument("--n", type=int, default=100)
    return bench


def test_smoke_sizes_replace_defaults_but_not_explicit_arguments():
    assert make().parse([]).n == 100
    assert make().parse(["--smoke"]).n == 3
    assert make().parse(["--smoke", "--n", "7"]).n == 7
    assert make().parse(["--n", "7", "--smoke"]).n == 7


def test_smoke_size_for_an_unknown_argument_is_a_programming_error():
    bench = Bench("demo", None, smoke={"typo": 1})
    with pytest.raises(ValueError, match="typo"):
        bench.parse(["--smoke"])


def test_ratios_are_costs_relative_to_limit_and_baseline():
    bench = make()
    bench.parse([])
    row = bench.compare("x", unit="s", system=(3.0, "sys"), baseline=(6.0, "naive"), limit=(1.5, "floor"))
    assert row["ratio_to_limit"] == 2.0 and row["ratio_to_baseline"] == 0.5
    without = bench.compare("y", unit="s", system=(1.0, "sys"), limit=(0.0, "floor"))
    assert without["ratio_to_limit"] is None and without["ratio_to_baseline"] is None


def test_failed_check_fails_the_run():
    bench = make()
    bench.parse([])
    with bench.measuring():
        bench.check("fine", True)
        bench.check("broken", False)
    assert bench.report()["ok"] is False
    assert bench.finish() == 1


def test_best_of_keeps_the_fastest_run_and_its_result_and_percentile_interpolates():
    calls = []

    def run():
        calls.append(1)
        time.sleep(0.0 if len(calls) == 2 else 0.05)
        return len(calls)

    seconds, result = best_of(run, 3)
    assert len(calls) == 3 and result == 2 and seconds < 0.05
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 95) == 5.0


def test_interleaved_takes_turns_and_keeps_each_fastest_run():
    order = []

    def make(name):
        return lambda: order.append(name) or len(order)

    out = interleaved({"a": make("a"), "b": make("b")}, {"a": 3, "b": 2}, clock="cpu")
    assert order == ["a", "b", "a", "b", "a"]
    assert set(out) == {"a", "b"} and all(seconds >= 0 for seconds, _ in out.values())
    assert out["a"][1] in (1, 3, 5) and out["b"][1] in (2, 4)


def test_json_mode_keeps_stdout_for_the_report_only(tmp_path):
    script = tmp_path / "demo.py"
    script.write_text(textwrap.dedent(f"""
        import os, subprocess, sys
        sys.path.insert(0, {str(REPO)!r})
        from bench.harness import Bench
        bench = Bench("demo", "Demo.", smoke={{}})
        bench.parse()
        with bench.measuring():
            print("noise from python")
            os.write(1, b"noise on fd 1\\n")
            subprocess.run(["echo", "noise from a child"])
            bench.compare("c", unit="s", system=(2.0, "a"), limit=(1.0, "b"))
            bench.check("ok", True)
        raise SystemExit(bench.finish())
    """))
    proc = subprocess.run([sys.executable, str(script), "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["comparisons"][0]["ratio_to_limit"] == 2.0
    assert "noise from python" in proc.stderr and "noise on fd 1" in proc.stderr
    assert "noise from a child" in proc.stderr
