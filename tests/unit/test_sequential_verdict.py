"""Group-sequential verdicts on a weekly-growing dataset: simulated false-positive rates under the null."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from comparna.rna.group_sequential import sequential_boundary
from comparna.rna.sequential import (
    DIFFERENT,
    NO_DIFFERENCE,
    NOT_YET,
    first_crossings,
    sequential_verdict,
    z_from_t,
)


def null_looks(datasets: int, looks: int, per_look: int, seed: int):
    """Paired differences with mean 0 (two equally good methods); the paired t statistic at every weekly look
    (cumulative targets), computed from running sums for all datasets at once."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, 0.1, (datasets, looks * per_look))
    n = np.arange(1, looks + 1) * per_look
    total = np.cumsum(d, axis=1)[:, n - 1]
    squares = np.cumsum(d * d, axis=1)[:, n - 1]
    mean = total / n
    var = (squares - n * mean**2) / (n - 1)
    t = mean / np.sqrt(var / n)
    return t, n


def rates(t: np.ndarray, n: np.ndarray, planned: int) -> tuple[float, float]:
    """Overall false-positive rates: sequential (boundary crossed at some look) and unadjusted (p < 0.05 at
    some look, i.e. the page said "different" at least once)."""
    first, _ = first_crossings(t, n, planned=planned)
    unadjusted = (2 * stats.t.sf(np.abs(t), n - 1) < 0.05).any(axis=1)
    return float((first >= 0).mean()), float(unadjusted.mean())


def test_weekly_looks_at_the_default_plan_keep_the_false_positive_rate_below_alpha():
    # 12 weekly looks of 40 new targets against the default planned maximum of 2000 (information up to 0.24)
    t, n = null_looks(4000, 12, 40, seed=14)
    sequential, unadjusted = rates(t, n, planned=2000)
    assert sequential <= 0.05
    assert unadjusted > 0.10  # repeated unadjusted looks: several times alpha


def test_eight_looks_spending_all_alpha_are_calibrated():
    # 8 equally spaced looks reaching the planned maximum: the boundary spends exactly alpha = 0.05
    t, n = null_looks(20_000, 8, 25, seed=19)
    sequential, unadjusted = rates(t, n, planned=200)
    se = np.sqrt(0.05 * 0.95 / 20_000)
    assert abs(sequential - 0.05) < 3 * se  # 0.0504 here: the nominal level, within sampling error
    assert unadjusted > 0.15  # 0.176: the unadjusted verdict is wrong 3.5 times as often
    # the verdict function agrees with the vectorised crossings on the first datasets
    first, _ = first_crossings(t[:60], n, planned=200)
    for k in range(60):
        v = sequential_verdict(t[k], n, planned=200)
        assert (v.crossed_at if v.crossed_at is not None else -1) == first[k]
        assert v.verdict == (DIFFERENT if first[k] >= 0 else NO_DIFFERENCE)


def test_verdict_states_and_t_to_z():
    # a large effect crosses early and stays "different"
    v = sequential_verdict([2.0, 9.0, 1.0], [50, 100, 150], planned=1000)
    assert v.verdict == DIFFERENT and v.crossed_at == 1 and v.looks == 3
    assert not v.unadjusted_different  # the current look alone would not even be significant
    # unadjusted significant, boundary not crossed: "not yet", the unadjusted result stays visible
    v = sequential_verdict([1.0, 2.5], [50, 100], planned=1000)
    assert v.verdict == NOT_YET and v.unadjusted_different and v.unadjusted_p < 0.05
    d = v.as_dict()
    assert d["looks"] == 2 and d["boundary_z"] > 2.5 and "O'Brien-Fleming" in d["method"]
    # looks after the planned maximum add nothing
    v = sequential_verdict([0.5, 1.0, 5.0], [500, 1000, 1500], planned=1000)
    assert v.verdict == NO_DIFFERENCE and v.looks == 2
    assert v.boundary[-1] == pytest.approx(sequential_boundary([0.5, 1.0]).z[-1])
    # t is put on the z scale through its p-value
    assert z_from_t(2.0, 10) == pytest.approx(stats.norm.isf(stats.t.sf(2.0, 10)))
    assert z_from_t(-2.0, 10) < -1.7 and z_from_t(2.0, 10_000_000) == pytest.approx(2.0, abs=1e-6)
    with pytest.raises(ValueError):
        sequential_verdict([1.0, 2.0], [100, 100], planned=1000)
