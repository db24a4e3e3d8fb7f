"""The suite's own timing report (issue 39): per-file wall times in ``var/test-report.json`` and one closing
line with the run's wall time.

Registered by ``tests/conftest.py``. Only the process that reports (the single process, or xdist's controller,
which receives every worker's reports) records and writes anything. A file's ``seconds`` is the sum of its
tests' set-up, call and tear-down durations (session fixtures are counted where they are first set up: a
stack shared by several files is charged to the first); ``span`` is the time from its first test's start to
its last test's end (the file's wall time when it runs on one worker, as with ``--dist loadfile``).

The closing line (printed just before pytest's own summary line) gives the wall time; past ``BUDGET_S`` it is
followed by the ten slowest files: a warning, never a failure (the machine may be loaded).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Where the report is written; ``COMPARNA_TEST_REPORT`` overrides it (empty: not written).
DEFAULT_PATH = REPO / "var" / "test-report.json"
#: The suite's budget on the 2-core reference machine, idle (issue 39).
BUDGET_S = 20 * 60


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _clock(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.1f} s"


class TimingReport:
    def __init__(self, config):
        self.config = config
        self.started = time.time()
        self.seconds: dict[str, float] = defaultdict(float)
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.tests: dict[str, int] = defaultdict(int)
        self.outcomes: dict[str, int] = defaultdict(int)
        self.written_at = self.started

    def pytest_runtest_logreport(self, report):
        path = _file_of(report.nodeid)
        self.seconds[path] += report.duration
        start = getattr(report, "start", None)
        stop = getattr(report, "stop", None)
        if start is not None and stop is not None:
            self.first[path] = min(self.first.get(path, start), start)
            self.last[path] = max(self.last.get(path, stop), stop)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.tests[path] += 1
            self.outcomes[report.outcome] += 1
        # written as the run goes too (every 30 s, "complete": false): a run cut short still leaves its times
        now = time.time()
        if now - self.written_at > 30:
            self.written_at = now
            self.write(now - self.started, self.files(), complete=False)

    def files(self) -> list[dict]:
        rows = [
            {
                "file": path,
                "seconds": round(seconds, 2),
                "span": round(self.last[path] - self.first[path], 2) if path in self.first else None,
                "tests": self.tests[path],
            }
            for path, seconds in self.seconds.items()
        ]
        return sorted(rows, key=lambda row: -row["seconds"])

    def write(self, wall: float, rows: list[dict], *, complete: bool = True) -> Path | None:
        target = os.environ.get("COMPARNA_TEST_REPORT", str(DEFAULT_PATH))
        if not target:
            return None
        path = Path(target)
        workers = getattr(self.config.option, "numprocesses", None)
        summary = {
            "complete": complete,
            "wall_seconds": round(wall, 2),
            "budget_seconds": BUDGET_S,
            "workers": workers or 0,
            "dist": getattr(self.config.option, "dist", "no"),
            "load_average": list(os.getloadavg()),
            "cores": os.cpu_count(),
            "outcomes": dict(self.outcomes),
            "files": rows,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(summary, indent=1) + "\n")
            tmp.replace(path)
        except OSError:
            return None
        return path

    # after --durations and the other summaries: the wall-time line is the last before pytest's closing line
    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter):
        wall = time.time() - self.started
        rows = self.files()
        written = self.write(wall, rows)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        where = f"; per-file times in {os.path.relpath(written, REPO)}" if written else ""
        tr = terminalreporter
        if wall > BUDGET_S and rows:
            tr.write_line(f"WARNING: the suite took longer than {_clock(BUDGET_S)}; its ten slowest files:")
            for row in rows[:10]:
                span = f" (wall {row['span']:.0f} s)" if row["span"] is not None else ""
                tr.write_line(f"  {row['seconds']:8.1f} s{span}  {row['file']} ({row['tests']} tests)")
        tr.write_line(f"test suite wall time: {_clock(wall)} (load {load}){where}")


def register(config) -> None:
    """Register the report in the process that reports: not in an xdist worker."""
    if hasattr(config, "workerinput") or config.pluginmanager.has_plugin("comparna-timing-report"):
        return
    config.pluginmanager.register(TimingReport(config), "comparna-timing-report")
