"""Bootstrap CIs, paired tests, power, multiple-testing adjustment and sequential boundaries vs references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from comparna.rna.group_sequential import sequential_boundary
from comparna.rna.statistics import (
    bh_adjust,
    bootstrap_ci_mean,
    compare_paired,
    format_p_value,
    holm_adjust,
    paired_bootstrap,
    paired_t_test,
    posterior_power,
    resample_indices,
    sample_size,
    spearman_matrix,
)


def naive_percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default, Hyndman & Fan type 7)."""
    h = (len(sorted_values) - 1) * q / 100
    lo = int(np.floor(h))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def test_bootstrap_ci_matches_naive_loop_on_the_same_draws():
    values = np.random.default_rng(1).beta(2, 3, 57)
    ci = bootstrap_ci_mean(values, resamples=2000, seed=9)
    rows = np.vstack(list(resample_indices(np.random.default_rng(9), values.size, 2000)))
    means = sorted(sum(values[i] for i in row) / values.size for row in rows)
    assert ci.low == pytest.approx(naive_percentile(means, 2.5), abs=1e-12)
    assert ci.high == pytest.approx(naive_percentile(means, 97.5), abs=1e-12)
    assert ci.estimate == pytest.approx(values.mean())
    assert ci.small and ci.n == 57


def test_bootstrap_ci_agrees_with_scipy_bootstrap():
    values = np.random.default_rng(2).normal(0.6, 0.2, 400)
    ours = bootstrap_ci_mean(values, seed=0)
    theirs = stats.bootstrap((values,), np.mean, n_resamples=10_000, method="percentile",
                             rng=np.random.default_rng(5)).confidence_interval
    assert ours.resamples == 10_000
    assert ours.low == pytest.approx(theirs.low, abs=0.004)
    assert ours.high == pytest.approx(theirs.high, abs=0.004)
    # and with the normal-theory interval for a large sample
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert ours.width == pytest.approx(2 * half, rel=0.08)


def test_paired_t_test_matches_scipy():
    rng = np.random.default_rng(3)
    a = rng.normal(0.5, 0.1, 80)
    b = a + rng.normal(0.02, 0.05, 80)
    ours = paired_t_test(a, b)
    ref = stats.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.df == 79


def test_paired_bootstrap_p_value_is_never_zero():
    rng = np.random.default_rng(4)
    a = rng.normal(0.8, 0.05, 200)
    b = a - 0.1 + rng.normal(0, 0.01, 200)
    result = paired_bootstrap(a, b, resamples=10_000, seed=1)
    assert result.exceedances == 0 and result.pvalue_is_bound
    assert result.pvalue == pytest.approx(1e-4) and result.pvalue_text == "< 0.0001"
    assert result.interval.low > 0.09 and result.interval.high < 0.11
    noisy = paired_bootstrap(a, a + rng.normal(0, 0.05, 200), resamples=2000, seed=1)
    assert 0 < noisy.pvalue <= 1 and not noisy.pvalue_is_bound


def test_format_p_value():
    assert format_p_value(0.0) == "< 1e-16"
    assert format_p_value(0.0, resamples=1000) == "< 0.001"
    assert format_p_value(0.0312) == "0.031"


def test_spearman_matrix_matches_scipy_with_ties_and_missing():
    rng = np.random.default_rng(5)
    scores = np.round(rng.random((4, 50)), 1)  # many ties
    ours = spearman_matrix(scores)
    ref = stats.spearmanr(scores.T).statistic
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    scores[1, :7] = np.nan
    ours = spearman_matrix(scores)
    both = ~np.isnan(scores[1])
    assert ours[0, 1] == pytest.approx(stats.spearmanr(scores[0, both], scores[1, both]).statistic, abs=1e-12)
    assert ours[2, 3] == pytest.approx(stats.spearmanr(scores[2], scores[3]).statistic, abs=1e-12)


def test_sample_size_and_power_are_inverse():
    # (z_0.8 + z_0.975)^2 = (0.8416 + 1.9600)^2 = 7.849 -> 8 RNAs for V_d = delta^2
    assert sample_size(1.0, 1.0) == 8
    assert sample_size(0.01, 0.02) == int(np.ceil(0.01 * 7.84887 / 0.0004 - 1e-9))
    n = sample_size(0.02, 0.015)
    assert posterior_power(0.02, 0.015, n) >= 0.8 > posterior_power(0.02, 0.015, n - 5)
    assert posterior_power(0.02, 0.0, 100) == pytest.approx(0.05)


def test_compare_paired_verdicts():
    rng = np.random.default_rng(6)
    base = rng.normal(0.6, 0.15, 300)
    different = compare_paired(base + 0.05 + rng.normal(0, 0.05, 300), base, resamples=1000)
    assert different.verdict == "different" and different.t_test.pvalue < 0.05
    equivalent = compare_paired(base + rng.normal(0, 0.02, 300), base, resamples=1000)
    assert equivalent.verdict == "equivalent" and equivalent.power > 0.8
    noisy = base[:12] + rng.normal(0, 0.1, 12)
    small = compare_paired(noisy, base[:12], resamples=1000)
    assert small.verdict == "inconclusive" and small.further_needed == small.n_required - 12 > 0
    assert small.spearman == pytest.approx(stats.spearmanr(noisy, base[:12]).statistic, abs=1e-12)


def naive_holm(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def naive_bh(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for rank, i in enumerate(order):
        out[i] = min(min(1.0, m * p[j] / (r + 1)) for r, j in enumerate(order) if r >= rank)
    return out


def test_holm_and_bh_textbook_example_and_naive():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005*4, 0.01*3, 0.03*2, 0.04*1 -> 0.02, 0.03, 0.06, max(0.06, 0.04)
    np.testing.assert_allclose(holm_adjust(p), [0.03, 0.06, 0.06, 0.02])
    # BH: 0.005*4/1, 0.01*4/2, 0.03*4/3, 0.04*4/4 -> 0.02, 0.02, 0.04, 0.04
    np.testing.assert_allclose(bh_adjust(p), [0.02, 0.04, 0.04, 0.02])
    rng = np.random.default_rng(7)
    q = list(rng.random(30) ** 3)
    np.testing.assert_allclose(holm_adjust(q), naive_holm(q))
    np.testing.assert_allclose(bh_adjust(q), naive_bh(q))
    with_nan = holm_adjust([0.01, np.nan, 0.02])
    assert np.isnan(with_nan[1]) and with_nan[0] == pytest.approx(0.02)


def test_lan_demets_obrien_fleming_boundaries():
    # published two-sided alpha = 0.05, five equally spaced looks (ldbounds / gsDesign sfLDOF)
    bound = sequential_boundary([0.2, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_allclose(bound.z, [4.8769, 3.3569, 2.6803, 2.2898, 2.0310], atol=2e-3)
    assert bound.spent[-1] == pytest.approx(0.05)
    assert sequential_boundary([1.0]).z[0] == pytest.approx(1.959964, abs=1e-5)
    # simulated type-I error of the repeated looks stays at alpha
    rng = np.random.default_rng(0)
    paths = np.cumsum(rng.normal(0, np.sqrt(0.2), (200_000, 5)), axis=1) / np.sqrt(bound.fractions)
    assert (np.abs(paths) >= bound.z).any(axis=1).mean() == pytest.approx(0.05, abs=0.003)
    assert "O'Brien-Fleming" in bound.describe() and "Lan-DeMets" in bound.describe()
    assert bound.crossed(4, 2.1) and not bound.crossed(0, 4.0)
