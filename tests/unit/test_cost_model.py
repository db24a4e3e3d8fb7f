"""The ETA's cost model of a method version (comparna.services.backlog.cost_model): how its runtime grows with
length, fitted to its runs, because a declared complexity can be wrong (make run, stop 44: HotKnots, declared
cubic, ran ~n^6; a small dataset's ETA said "under a minute" for ten minutes)."""

from __future__ import annotations

import math
import random

import pytest

from comparna.services.backlog import FIT_BOUNDS, cost_model, units

LENGTHS = [40, 60, 80, 100, 120, 140, 160, 180, 200, 220, 260, 300, 400, 500, 600]


@pytest.mark.parametrize("k", [1.0, 2.0, 3.0, 5.5])
def test_the_exponent_of_a_power_law_is_recovered(k):
    rng = random.Random(int(k * 10))
    # 5 s at 300 nt, with 3 % noise; the jobs under a second are left out of the fit
    runs = [(n, (0.02 + 5.0 * (n / 300) ** k) * math.exp(rng.gauss(0, 0.03))) for n in LENGTHS]
    fixed, fitted = cost_model(runs, declared=1)
    assert fitted == pytest.approx(k, abs=0.25)
    assert cost_model(runs, declared=3)[1] == pytest.approx(max(k, 3), abs=0.25)  # never below the declared
    # the model predicts the ratio of a long to a short job as the runs do
    assert units(300, fitted, fixed) / units(150, fitted, fixed) == pytest.approx(2**k, rel=0.25)


def test_hotknots_runs_of_make_run_give_a_steep_model():
    """Real runtimes of HotKnots (stop 44's make run, seconds by length): declared cubic, the 189-nt target
    cost 34 times the 107-nt one; the fitted model says more than 15 times, the declared one 1.1."""
    runs = [(70, 0.31), (107, 3.04), (189, 103.6), (174, 36.9), (85, 0.34), (69, 0.43), (58, 0.089),
            (48, 0.012), (40, 0.005), (35, 0.018)]
    fixed, k = cost_model(runs, declared=3)
    assert k >= 5
    assert units(189, k, fixed) / units(107, k, fixed) > 15
    assert units(189, 3) / units(107, 3) < 1.2  # the declared model (fixed cost 1)


def test_too_few_or_too_alike_runs_keep_the_declared_model():
    assert cost_model([(50, 0.01), (100, 1.0), (200, 8.0)], declared=3) == (1.0, 3.0)  # two of a second
    alike = [(100 + i, 1.0 + 0.01 * i) for i in range(10)]  # a length ratio under 1.5
    assert cost_model(alike, declared=2) == (1.0, 2.0)
    fast = [(n, 0.3 * n / 300) for n in LENGTHS]  # every run under a second: overhead and noise
    assert cost_model(fast, declared=4) == (1.0, 4.0)
    flat = [(n, 2.0) for n in LENGTHS]  # runtimes that do not grow with length: the lowest exponent
    assert cost_model(flat, declared=1)[1] == FIT_BOUNDS[0]


def test_the_exponent_is_bounded():
    steep = [(n, 1e-30 * n**14) for n in (100, 120, 140, 160, 180, 200, 220)]
    assert cost_model(steep, declared=3)[1] == FIT_BOUNDS[1]
    shallow = [(n, 1.0 + 0.5 * n / 300 * (n % 7) / 7) for n in LENGTHS]
    assert cost_model(shallow, declared=2)[1] >= 2
