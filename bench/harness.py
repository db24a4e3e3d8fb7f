"""The shared harness of every benchmark in ``bench/``: arguments, timing, machine record and reporting.

Every benchmark measures the **system** (what CompaRNA does), its naive **baseline** and its **limit** (the
fastest this work can be done on this machine: in-process compute, a vectorised lower bound, static bytes)
in the same run, and reports each comparison as costs (seconds per unit; lower is better):

- ``ratio_to_limit = system / limit`` — 1.0 means the system is at the limit; the headline figure;
- ``ratio_to_baseline = system / baseline`` — below 1.0 the system beats the naive way.

Usage in a benchmark::

    bench = Bench("metrics", __doc__, smoke={"targets": 20})
    bench.parser.add_argument("--targets", type=int, default=200)
    args = bench.parse(argv)
    with bench.measuring():
        ...
        bench.compare("counts + scores", unit="s per comparison", system=(t1, "count_pairs"),
                      baseline=(t2, "plain sets"), limit=(t3, "numpy batch"))
        bench.check("same counts", same)
    return bench.finish()

``--smoke`` swaps in the small sizes (explicit arguments still win), ``--json`` prints one JSON object on
stdout (everything else the run prints, including subprocesses, goes to stderr meanwhile).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
#: Format version of the JSON report (bump when a key changes meaning).
SCHEMA = 1

T = TypeVar("T")


# ----------------------------------------------------------------------------------------------- timing
class Timer:
    """``with Timer() as t: ...`` then ``t.seconds`` (wall clock, ``time.perf_counter``)."""

    seconds: float = 0.0

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def best_of(fn: Callable[[], T], repeat: int, *, clock: str = "wall") -> tuple[float, T]:
    """Run ``fn`` ``repeat`` times (at least once); the shortest time and that run's result.

    The minimum is the figure least disturbed by other load on a shared machine. ``clock="cpu"`` times
    with this process's CPU time (``time.process_time``, all its threads) instead of the wall clock: for
    single-threaded compute it leaves out the time other processes held the core.
    """
    now = {"wall": time.perf_counter, "cpu": time.process_time}[clock]
    best, result = math.inf, None
    for _ in range(max(1, repeat)):
        start = now()
        value = fn()
        elapsed = now() - start
        if elapsed < best:
            best, result = elapsed, value
    return best, result  # type: ignore[return-value]


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int | dict[str, int], *,
                clock: str = "wall") -> dict[str, tuple[float, Any]]:
    """:func:`best_of` for several functions taken in turns (a, b, c, a, b, c, ...), so that a change of
    machine load hits all of them alike; ``repeat`` may differ per function. ``{name: (seconds, result)}``."""
    rounds = {name: max(1, repeat if isinstance(repeat, int) else repeat.get(name, 1)) for name in fns}
    out: dict[str, tuple[float, Any]] = {}
    for r in range(max(rounds.values())):
        for name, fn in fns.items():
            if r < rounds[name]:
                seconds, value = best_of(fn, 1, clock=clock)
                if name not in out or seconds < out[name][0]:
                    out[name] = (seconds, value)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation (numpy's default), without numpy."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summary(values: Sequence[float]) -> dict[str, float]:
    """mean, median, p95, min, max and n of a list of timings (seconds)."""
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "p95": percentile(values, 95),
        "min": min(values),
        "max": max(values),
    }


# ---------------------------------------------------------------------------------------------- machine
def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine() -> dict[str, Any]:
    """What the figures depend on: cores, CPU, memory, Python, commit; the load is added by :class:`Bench`."""
    mem_mb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_mb = int(line.split()[1]) // 1024
    return {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_mb": mem_mb,
        "python": platform.python_version(),
        "commit": _commit(),
    }


# ---------------------------------------------------------------------------------------------- report
def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b > 0 or not math.isfinite(a) or not math.isfinite(b):
        return None
    return a / b


def _jsonable(value: Any) -> Any:
    """numpy scalars/arrays, paths and tuples to plain JSON; non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Bench:
    """One benchmark run: its parser, its measurements and its report (text or one JSON object).

    Parameters
    ----------
    name : str
        Short name (``"metrics"`` for ``bench_metrics.py``); the JSON's ``bench``.
    doc : str
        The benchmark's module docstring: first line is the ``--help`` description, the rest its epilog.
    smoke : dict
        Argument defaults of the ``--smoke`` size (dest names); explicit arguments still override them.
    """

    def __init__(self, name: str, doc: str | None, *, smoke: dict[str, Any]):
        self.name = name
        lines = (doc or name).strip().splitlines()
        self.parser = argparse.ArgumentParser(
            prog=f"bench_{name}.py",
            description=lines[0],
            epilog="\n".join(lines[1:]).strip() or None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.parser.add_argument("--smoke", action="store_true",
                                 help="tiny sizes that finish in seconds (CI runs every benchmark so)")
        self.parser.add_argument("--json", action="store_true",
                                 help="print one JSON object on stdout (other output goes to stderr)")
        self._smoke = dict(smoke)
        self.args: argparse.Namespace | None = None
        self.comparisons: list[dict[str, Any]] = []
        self.checks: dict[str, bool] = {}
        self.details: dict[str, Any] = {}
        self.notes: list[str] = []
        self._machine: dict[str, Any] = {}
        self._wall = 0.0
        self._inside = False

    # -- arguments
    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """Parse ``argv``; with ``--smoke`` the smoke sizes replace the defaults first."""
        argv = list(sys.argv[1:] if argv is None else argv)
        known, _ = self.parser.parse_known_args(argv)
        if known.smoke:
            unknown = set(self._smoke) - {a.dest for a in self.parser._actions}
            if unknown:
                raise ValueError(f"smoke sizes for unknown arguments: {sorted(unknown)}")
            self.parser.set_defaults(**self._smoke)
        self.args = self.parser.parse_args(argv)
        return self.args

    @property
    def mode(self) -> str:
        return "smoke" if self.args is not None and self.args.smoke else "full"

    # -- measuring
    @contextlib.contextmanager
    def measuring(self) -> Iterator[Bench]:
        """Record the machine and its load around the run; in JSON mode keep stdout for the report only.

        File descriptor 1 is pointed at stderr for the duration, so prints of this process, of C libraries
        and of child processes cannot corrupt the JSON object printed by :meth:`finish`.
        """
        self._machine = machine()
        self._machine["load_before"] = list(os.getloadavg())
        saved = None
        if self.args is not None and self.args.json:
            sys.stdout.flush()
            saved = os.dup(1)
            os.dup2(2, 1)
        start = time.perf_counter()
        self._inside = True
        try:
            yield self
        finally:
            self._inside = False
            self._wall = time.perf_counter() - start
            self._machine["load_after"] = list(os.getloadavg())
            if saved is not None:
                sys.stdout.flush()
                os.dup2(saved, 1)
                os.close(saved)

    def compare(
        self,
        name: str,
        *,
        unit: str,
        system: tuple[float, str],
        limit: tuple[float, str],
        baseline: tuple[float, str] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Record one headline comparison; each of system/baseline/limit is ``(cost, what was measured)``.

        Costs are in ``unit`` (seconds per something): lower is better for all three.
        """
        row = {
            "name": name,
            "unit": unit,
            "system": system[0],
            "system_is": system[1],
            "baseline": baseline[0] if baseline else None,
            "baseline_is": baseline[1] if baseline else None,
            "limit": limit[0],
            "limit_is": limit[1],
            "ratio_to_limit": _ratio(system[0], limit[0]),
            "ratio_to_baseline": _ratio(system[0], baseline[0]) if baseline else None,
            **extra,
        }
        self.comparisons.append(row)
        return row

    def check(self, name: str, ok: bool) -> bool:
        """A correctness condition of the run (e.g. the limit computed the same counts); False fails it."""
        self.checks[name] = bool(ok)
        return bool(ok)

    # -- output
    def report(self) -> dict[str, Any]:
        params = {k: v for k, v in vars(self.args or argparse.Namespace()).items() if k not in {"json"}}
        return _jsonable({
            "schema": SCHEMA,
            "bench": self.name,
            "mode": self.mode,
            "ok": all(self.checks.values()),
            "params": params,
            "machine": self._machine,
            "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "wall_s": round(self._wall, 3),
            "comparisons": self.comparisons,
            "checks": self.checks,
            "details": self.details,
            "notes": self.notes,
        })

    def text(self) -> str:
        r = self.report()
        m = r["machine"]
        load = "/".join(f"{x:.2f}" for x in m.get("load_before", [])[:1] + m.get("load_after", [])[:1])
        out = [
            f"bench_{self.name} ({r['mode']}): {m.get('usable_cores')} cores ({m.get('cpu')}), "
            f"load {load} (before/after), commit {m.get('commit')}, {r['wall_s']:.1f} s",
            "params: " + " ".join(f"{k}={v}" for k, v in r["params"].items() if k != "smoke"),
            "",
            f"{'comparison':44} {'unit':24} {'system':>10} {'baseline':>10} {'limit':>10} "
            f"{'x limit':>8} {'x baseline':>10}",
        ]
        for c in r["comparisons"]:
            out.append(
                f"{c['name'][:44]:44} {c['unit'][:24]:24} {_num(c['system']):>10} {_num(c['baseline']):>10} "
                f"{_num(c['limit']):>10} {_ratio_text(c['ratio_to_limit']):>8} "
                f"{_ratio_text(c['ratio_to_baseline']):>10}"
            )
        out.append("")
        seen: set[str] = set()
        for c in r["comparisons"]:
            for role in ("system", "baseline", "limit"):
                what = c.get(f"{role}_is")
                if what and (role, what) not in seen:
                    seen.add((role, what))  # type: ignore[arg-type]
                    out.append(f"  {role:8} = {what}")
        for name, ok in r["checks"].items():
            out.append(f"check: {name}: {'ok' if ok else 'FAILED'}")
        out.extend(f"note: {n}" for n in r["notes"])
        return "\n".join(out)

    def finish(self) -> int:
        """Print the report (text, or JSON with ``--json``); exit status 1 when a check failed."""
        if self._inside:
            raise RuntimeError("finish() inside measuring(): stdout is still pointed at stderr")
        if self.args is not None and self.args.json:
            print(json.dumps(self.report(), indent=1, allow_nan=False))
        else:
            print(self.text())
        return 0 if all(self.checks.values()) else 1


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def _ratio_text(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
