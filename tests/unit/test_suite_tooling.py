"""The suite's own tooling (issue 39): the per-file timing report with its closing line, and the xdist plan
(units of work, hand-out order)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import xdist_plan

REPO = Path(__file__).resolve().parents[2]

SAMPLE = '''
import time
import pytest

@pytest.fixture(scope="module")
def slow_setup():
    time.sleep(0.3)

def test_one(slow_setup):
    pass

@pytest.mark.parametrize("x", [1, 2])
def test_two(x):
    time.sleep(0.1)
'''


def test_report_gives_per_file_times_and_the_closing_wall_time_line(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text(SAMPLE)
    (tests / "test_b.py").write_text("def test_fast():\n    pass\n")
    # the plugin as tests/conftest.py registers it, in a throwaway suite of two files
    (tests / "conftest.py").write_text(
        "from tests_support_timing import register\n\ndef pytest_configure(config):\n    register(config)\n"
    )
    (tmp_path / "tests_support_timing.py").write_text((REPO / "tests/support/timing_report.py").read_text())
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:django", "-q", "tests"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"COMPARNA_TEST_REPORT": str(report), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    # the wall-time line comes last before pytest's own closing line
    assert lines[-1].startswith("4 passed") and lines[-2].startswith("test suite wall time: ")
    assert "WARNING" not in proc.stdout  # far under the budget: no list of slow files
    data = json.loads(report.read_text())
    files = {row["file"]: row for row in data["files"]}
    assert set(files) == {"tests/test_a.py", "tests/test_b.py"}
    assert files["tests/test_a.py"]["tests"] == 3 and files["tests/test_a.py"]["seconds"] >= 0.5
    assert files["tests/test_a.py"]["span"] >= 0.5
    assert data["outcomes"] == {"passed": 4} and data["wall_seconds"] >= files["tests/test_a.py"]["seconds"]
    assert [row["file"] for row in data["files"]][0] == "tests/test_a.py"  # slowest first


def test_units_of_work_are_files_groups_and_single_bench_smokes():
    assert xdist_plan._group("tests/e2e/test_x.py::test_a@stack") == "stack"
    assert xdist_plan._group("tests/unit/test_x.py::test_a[user@example.org]") is None
    assert xdist_plan._group("tests/unit/test_x.py::test_a[a@b]@grp") == "grp"
    assert xdist_plan._group("tests/unit/test_x.py::test_a") is None
    assert xdist_plan.PER_TEST <= {str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")}


def test_hand_out_order_starts_with_the_slowest_files():
    ids = ["tests/unit/test_u.py::t", "tests/django/test_d.py::t", "tests/bench/test_bench_smoke.py::t[x]",
           "tests/e2e/test_z.py::t", xdist_plan.SLOWEST[1] + "::t", xdist_plan.SLOWEST[0] + "::t"]
    ids.append("tests/e2e/test_browser_x.py::t")
    ordered = sorted(ids, key=lambda nodeid: xdist_plan.rank(nodeid, {"tests/e2e/test_browser_x.py"}))
    # a file using the browser last, after every file that may use the database (Playwright's loop stays in
    # the process, and Django then refuses database access: unit files have django_db tests too)
    assert ordered == [xdist_plan.SLOWEST[0] + "::t", xdist_plan.SLOWEST[1] + "::t",
                       "tests/bench/test_bench_smoke.py::t[x]", "tests/e2e/test_z.py::t",
                       "tests/django/test_d.py::t", "tests/unit/test_u.py::t",
                       "tests/e2e/test_browser_x.py::t"]
    # the hint names real files (a renamed file would silently lose its place)
    missing = [path for path in xdist_plan.SLOWEST if not (REPO / path).exists()]
    assert missing == []
