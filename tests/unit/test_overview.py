"""The PPV–sensitivity overview's points (comparna.rna.overview): means and intervals of each score equal
the ones computed for that score alone, on an independent bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from comparna.rna.overview import overview_point
from comparna.rna.statistics import bootstrap_ci_mean


def test_each_interval_is_the_bootstrap_of_that_score_alone():
    rng = np.random.default_rng(5)
    sens = rng.uniform(0.3, 1.0, 57)
    ppv = np.clip(sens + rng.normal(0, 0.1, 57), 0, 1)
    point = overview_point(sens, ppv, seed=11)
    assert point["n"] == 57
    for name, values in (("sensitivity", sens), ("ppv", ppv)):
        alone = bootstrap_ci_mean(values, seed=11)
        assert point[name]["mean"] == pytest.approx(values.mean())
        assert (point[name]["low"], point[name]["high"]) == pytest.approx((alone.low, alone.high))
        assert point[name]["low"] < point[name]["mean"] < point[name]["high"]


def test_against_an_independent_percentile_bootstrap():
    rng = np.random.default_rng(2)
    sens, ppv = rng.uniform(0, 1, 40), rng.uniform(0, 1, 40)
    point = overview_point(sens, ppv, seed=3, resamples=4000)
    # an independent bootstrap with other draws: the same interval to within Monte-Carlo error
    other = np.random.default_rng(99)
    draws = other.integers(0, 40, size=(4000, 40))
    for name, values in (("sensitivity", sens), ("ppv", ppv)):
        low, high = np.percentile(values[draws].mean(axis=1), [2.5, 97.5])
        assert point[name]["low"] == pytest.approx(low, abs=0.02)
        assert point[name]["high"] == pytest.approx(high, abs=0.02)


def test_edge_cases():
    assert overview_point([], [], seed=1) is None
    one = overview_point([0.5], [0.25], seed=1)
    assert one["n"] == 1 and one["sensitivity"] == {"mean": 0.5, "low": 0.5, "high": 0.5}
    assert one["ppv"] == {"mean": 0.25, "low": 0.25, "high": 0.25}
    # deterministic under its seed
    assert overview_point([0.1, 0.9, 0.4], [0.2, 0.3, 0.8], seed=7) == overview_point(
        [0.1, 0.9, 0.4], [0.2, 0.3, 0.8], seed=7
    )
