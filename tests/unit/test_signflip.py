"""The exact family sign-flip null (comparna.rna.signflip, issue 35) against independent computations.

The references here share no code with the module: an enumeration of all 2^C sign vectors (C ≤ 20), a plain
two-sided convolution of the whole distribution of Σ ε_c S_c in probabilities (no truncation, no rescaling;
C up to 300), brute-force Walsh averages, and the CR1 formula written out.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from comparna.rna.clustered import _signed_rank_sums, clustered_signed_rank_test
from comparna.rna.signflip import (
    TINY,
    _dp_cost,
    clustered_mean_interval,
    hodges_lehmann,
    holm_thresholds,
    resampled_pvalues,
    saddlepoint_pvalues,
    sign_flip_pvalue,
    sign_flip_test,
    walsh_order_statistic,
)

THRESHOLDS = (0.05, 0.01, 0.001, 1e-4, 1e-5, 1e-6)
BAND = (min(THRESHOLDS), max(THRESHOLDS))


def enumerated(sums: np.ndarray) -> float:
    """P(|Σ ε_c S_c| ≥ |Σ S_c|) over all 2^C sign vectors."""
    s = np.asarray(sums, dtype=np.int64)
    observed = abs(int(s.sum()))
    hits = 0
    for signs in itertools.product((-1, 1), repeat=s.size):
        hits += abs(int(np.dot(signs, s))) >= observed
    return hits / 2**s.size


def convolved(sums: np.ndarray) -> float:
    """The whole two-sided distribution of Σ ε_c |S_c| by convolution, in probabilities."""
    a = np.abs(np.asarray(sums, dtype=np.int64))
    a = a[a > 0]
    total = int(a.sum())
    pmf = np.zeros(2 * total + 1)  # index = value + total
    pmf[total] = 1.0
    nxt = np.empty_like(pmf)
    for w in a.tolist():
        nxt[:w] = 0.0
        nxt[w:] = pmf[: pmf.size - w]
        nxt[: pmf.size - w] += pmf[w:]
        nxt *= 0.5
        pmf, nxt = nxt, pmf
    values = np.arange(-total, total + 1)
    return float(pmf[np.abs(values) >= abs(int(np.sum(sums)))].sum())


def family_data(rng: np.random.Generator, families: int, *, max_targets: int, shift: float):
    """Per-target differences with heavy-tailed family sizes, a family effect, ties and zeros."""
    sizes = np.minimum(1 + rng.pareto(1.1, families).astype(int), 200)
    if sizes.sum() > max_targets:
        sizes = np.maximum(1, sizes * max_targets // sizes.sum())
    codes = np.repeat(np.arange(families), sizes)
    effect = rng.normal(0, rng.uniform(0.02, 0.15), families)[codes]
    d = np.round(shift + effect + rng.normal(0, 0.1, codes.size), 2)  # rounding: ties
    d[rng.random(codes.size) < 0.1] = 0.0  # zeros (dropped by the test)
    return d, codes


def verdicts(p: float) -> list[bool]:
    return [p < x for x in THRESHOLDS]


# ----------------------------------------------------------------------------------------- exactness
def test_exact_count_equals_the_enumeration_of_every_sign_vector():
    rng = np.random.default_rng(1)
    for _ in range(60):
        c = int(rng.integers(1, 15))
        sums = rng.integers(-40, 60, c) * rng.integers(1, 4)
        expected = enumerated(sums) if np.any(sums) else math.nan
        got = sign_flip_test(sums)
        if np.any(sums):
            assert got.method == "exact" and got.p == pytest.approx(expected, rel=1e-12, abs=0)
        else:
            assert math.isnan(got.p)


def test_against_an_independent_dp_up_to_300_families_heavy_tails_ties_and_zeros():
    """p within 1 % where p < 0.01 and the verdict at every threshold identical, both with the default
    budgets and with the exact count forbidden outside the band (saddlepoint there, exact near it)."""
    rng = np.random.default_rng(35)
    checked = 0
    for case in range(14):
        families = int(rng.integers(21, 301))
        d, codes = family_data(rng, families, max_targets=700, shift=rng.choice([0.0, 0.02, 0.05, 0.1]))
        sums, _ = _signed_rank_sums(d, codes)
        reference = convolved(sums)
        for out in (sign_flip_test(sums, band=BAND), sign_flip_test(sums, band=BAND, budget=0)):
            assert out.method in {"exact", "saddlepoint"}, out
            assert verdicts(out.p) == verdicts(reference), (case, out, reference)
            if out.method == "saddlepoint":  # only far outside the widened band
                assert out.p < BAND[0] / 10 or out.p > BAND[1] * 10
            if reference < 0.01:
                tolerance = 1e-9 if out.method == "exact" else 0.03
                assert out.p == pytest.approx(reference, rel=tolerance), (case, out, reference)
            checked += 1
        # and the module's exact count agrees with the plain convolution to rounding
        assert sign_flip_test(sums).p == pytest.approx(reference, rel=1e-9)
    assert checked == 28


def test_the_saddlepoint_alone_is_within_a_few_percent_in_the_tail():
    """Lugannani–Rice with the lattice correction, checked where it is used: many families, p < 1e-4."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(10):
        d, codes = family_data(rng, int(rng.integers(100, 301)), max_targets=700, shift=0.08)
        sums, _ = _signed_rank_sums(d, codes)
        reference = convolved(sums)
        if not 1e-200 < reference < 1e-4:
            continue
        a = np.abs(sums[sums != 0]).astype(np.float64)
        sp = saddlepoint_pvalues(a, np.ones((1, a.size)), np.array([abs(float(sums.sum()))]),
                                 2.0 * float(np.gcd.reduce(np.abs(sums[sums != 0]))))[0]
        worst = max(worst, abs(sp / reference - 1))
    assert 0 < worst < 0.03


# ------------------------------------------------------------------------------------- the issue's rows
def _all_better(sizes: list[int]) -> np.ndarray:
    """A better by 0.10 on every target: every |d| ties, each doubled average rank is N + 1."""
    codes = np.repeat(np.arange(len(sizes)), sizes)
    sums, _ = _signed_rank_sums(np.full(codes.size, 0.10), codes)
    return sums


@pytest.mark.parametrize(
    "sizes, expected",
    [
        ([300] * 5 + [1] * 15, 2 / 2**20),  # 1.9e-6
        ([300] * 5 + [1] * 16, 2 / 2**21),  # 9.5e-7 (the normal form said 0.024)
        ([450, 300, 150, 80, 40] + [1 + i % 5 for i in range(227)], 2 / 2**232),  # 2.9e-70
        ([401, 392, 343, 288, 239, 66, 62, 29, 14], 2 / 2**9),  # ArchiveII: the floor
    ],
)
def test_the_issue_table_rows(sizes, expected):
    out = sign_flip_test(_all_better(sizes), band=(0.001 / 780, 0.001))
    assert out.method == "exact" and out.p == pytest.approx(expected, rel=1e-12)
    assert sign_flip_pvalue(_all_better(sizes)) == (out.p, "exact")


def test_the_232_cluster_row_through_the_test_of_two_methods():
    sizes = [450, 300, 150, 80, 40] + [1 + i % 5 for i in range(227)]
    labels = [f"F{k}" for k, n in enumerate(sizes) for _ in range(n)]
    a = np.linspace(0.3, 0.9, len(labels))
    test = clustered_signed_rank_test(a, a - 0.1, labels)
    assert test.clusters == 232 and test.pvalue == pytest.approx(2.9e-70, rel=0.01)


def test_tails_below_every_float_are_the_smallest_float_never_zero():
    out = sign_flip_test(np.full(3000, 7))  # 2 / 2^3000
    assert out.method == "exact" and out.p == TINY
    sp = saddlepoint_pvalues(np.full(2000, 1.0), np.ones((1, 2000)), np.array([1990.0]))
    assert sp[0] >= TINY


# ---------------------------------------------------------------------------------------- brackets
def test_brackets_hold_the_exact_p_and_decide_or_say_undecided():
    rng = np.random.default_rng(11)
    d, codes = family_data(rng, 250, max_targets=700, shift=0.03)
    sums, _ = _signed_rank_sums(d, codes)
    exact = convolved(sums)
    a = np.abs(sums[sums != 0])
    cost = _dp_cost(a, (int(a.sum()) - abs(int(sums.sum()))) // 2)  # the exact count's element operations
    band = (exact / 3, exact * 3)  # the exact p is in the band: the saddlepoint may not decide
    out = sign_flip_test(sums, band=band, budget=cost // 50, hard_budget=cost // 2)
    assert out.method in {"bracket", "undecided"}
    assert out.low <= exact * (1 + 1e-9) and exact <= out.high * (1 + 1e-9)
    assert out.low <= out.p <= out.high
    # a threshold away from the p: the bracket decides once it no longer holds it
    decided = sign_flip_test(sums, band=band, thresholds=(exact * 2,), budget=cost // 50,
                             hard_budget=cost // 2)
    assert decided.method == "bracket" and decided.high < exact * 2
    # Holm's grid: a bracket between two of its thresholds decides
    grid = holm_thresholds(0.001, 4950)
    assert grid[0] == 0.001 and grid[-1] == pytest.approx(0.001 / 4950) and grid.size == 4950
    # no budget at all: undecided, never a normal-form verdict
    none = sign_flip_test(sums, band=band, budget=0, hard_budget=0)
    assert none.method == "undecided"


# ---------------------------------------------------------------------------- the bootstrap's p-values
def test_resampled_pvalues_decide_as_the_single_test_of_the_expanded_families():
    rng = np.random.default_rng(5)
    families, pairs = 40, 12
    signed = np.zeros((families, pairs))
    for p in range(pairs):
        d, codes = family_data(rng, families, max_targets=300, shift=0.01 * p)
        sums, _ = _signed_rank_sums(d, codes)
        signed[np.unique(codes[d != 0]), p] = sums / 2
    weights = rng.multinomial(families, np.ones(families) / families, size=60)
    band = (0.001 / pairs, 0.001)
    got = resampled_pvalues(signed, weights, band=band)
    assert got.shape == (60, pairs)
    for r in range(60):
        for p in range(pairs):
            expanded = np.repeat(np.rint(2 * signed[:, p]).astype(np.int64), weights[r])
            exact = sign_flip_test(expanded).p if np.any(expanded) and expanded.sum() else 1.0
            assert (got[r, p] < band[0]) == (exact < band[0])
            assert (got[r, p] < band[1]) == (exact < band[1])
            if band[0] / 5 <= exact <= band[1] * 5:  # (the approximation decides only outside 10×)
                assert got[r, p] == pytest.approx(exact, rel=1e-9)


def test_resampled_pvalues_never_beat_the_floor_of_few_families():
    rng = np.random.default_rng(2)
    signed = rng.integers(1, 300, size=(9, 5)) / 2.0
    weights = rng.multinomial(9, np.ones(9) / 9, size=200)
    assert resampled_pvalues(signed, weights, band=(0.001 / 5, 0.001)).min() >= 2 / 2**9


# ---------------------------------------------------------------------------------- Hodges–Lehmann
def test_walsh_order_statistics_equal_brute_force_with_ties():
    rng = np.random.default_rng(3)
    for n, decimals in ((1, 1), (2, 1), (7, 1), (90, 1), (700, 1), (900, 12), (1500, 3)):
        x = np.sort(np.round(rng.normal(size=n), decimals))
        walsh = np.sort((x[:, None] + x[None, :])[np.triu_indices(n)])
        for k in {1, walsh.size // 3 + 1, (walsh.size + 1) // 2, walsh.size}:
            assert walsh_order_statistic(x, k) == walsh[k - 1]


def test_hodges_lehmann_is_the_median_of_walsh_averages_with_an_interval_around_it():
    rng = np.random.default_rng(4)
    for n, decimals in ((500, 3), (499, 12), (2, 2), (3, 1)):  # an even and an odd count of Walsh sums
        x = np.round(rng.normal(0.03, 0.1, n), decimals)
        walsh = ((x[:, None] + x[None, :]) / 2)[np.triu_indices(n)]
        assert hodges_lehmann(x, np.arange(n)).estimate == pytest.approx(np.median(walsh), abs=1e-15)
    d = np.round(rng.normal(0.03, 0.1, 501), 3)
    codes = rng.integers(0, 60, d.size)
    walsh = ((d[:, None] + d[None, :]) / 2)[np.triu_indices(d.size)]
    out = hodges_lehmann(d, codes)
    assert out.estimate == pytest.approx(np.median(walsh), abs=1e-15)
    assert out.low < out.estimate < out.high and out.n == 501 and out.clusters == 60
    # one target per family: close to the classical Wilcoxon interval (normal critical value here)
    single = hodges_lehmann(d, np.arange(d.size))
    m = walsh.size
    k = int(math.floor(m / 2 - 1.96 * math.sqrt(d.size * (d.size + 1) * (2 * d.size + 1) / 24)))
    ordered = np.sort(walsh)
    assert ordered[k - 3] <= single.low <= ordered[k + 3]
    # families sharing an effect widen the interval
    effect = rng.normal(0, 0.08, 60)[codes]
    assert np.ptp(hodges_lehmann(d + effect, codes)[1:3]) > np.ptp(hodges_lehmann(d + effect,
                                                                              np.arange(d.size))[1:3])


# ---------------------------------------------------------------------------- the equivalence interval
def test_clustered_mean_interval_is_cr2_with_bell_mccaffrey_degrees_of_freedom():
    """Against the matrix definitions: CR2 adjusts each family's residuals by (I − H_cc)^−½ with H the hat
    matrix of the constant; ν = (tr G)²/tr G² for G = B'MΩMB, B = the families' CR2 weight columns, Ω the
    exchangeable working covariance with the ANOVA intra-family correlation."""
    rng = np.random.default_rng(6)
    sizes = np.array([40, 17, 9, 5, 3, 3, 2, 1, 1, 1, 1])
    codes = np.repeat(np.arange(sizes.size), sizes)[rng.permutation(sizes.sum())]
    n = codes.size
    d = rng.normal(0.01, 0.1, n) + rng.normal(0, 0.08, sizes.size)[codes]
    low, high = clustered_mean_interval(d, codes, confidence=0.90)
    hat = np.full((n, n), 1 / n)
    resid = d - d.mean()
    variance, columns = 0.0, []
    for g in range(sizes.size):
        idx = np.flatnonzero(codes == g)
        block = np.eye(idx.size) - hat[np.ix_(idx, idx)]
        values, vectors = np.linalg.eigh(block)
        adjust = vectors @ np.diag(values**-0.5) @ vectors.T
        w = np.zeros(n)
        w[idx] = adjust.sum(axis=0) / n  # the contrast of the mean: 1'/N on the family's rows
        variance += float(w @ resid) ** 2
        columns.append(w)
    # the ANOVA estimate of the intra-family correlation, written out
    groups = [d[codes == g] for g in range(sizes.size)]
    msw = sum(((x - x.mean()) ** 2).sum() for x in groups) / (n - sizes.size)
    msb = sum(x.size * (x.mean() - d.mean()) ** 2 for x in groups) / (sizes.size - 1)
    n0 = (n - (sizes**2).sum() / n) / (sizes.size - 1)
    rho = min(0.99, max(0.0, (msb - msw) / n0 / ((msb - msw) / n0 + msw)))
    assert rho > 0.1
    same = codes[:, None] == codes[None, :]
    omega = np.where(same, rho, 0.0) + (1 - rho) * np.eye(n)
    b = np.array(columns).T
    m = np.eye(n) - hat
    g_matrix = b.T @ m @ omega @ m @ b
    df = np.trace(g_matrix) ** 2 / np.trace(g_matrix @ g_matrix)
    half = stats.t.ppf(0.95, df) * math.sqrt(variance)
    assert (low, high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-10)
    assert 1 < df < sizes.size - 1  # one family of 40 out of 83: far fewer than C − 1
    assert clustered_mean_interval(d, np.zeros(n, dtype=int)) == (-math.inf, math.inf)
