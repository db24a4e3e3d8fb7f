"""Holm decisions refined only where they depend on an approximation (issue 35: the nightly at full size).

A ranking's pairs first get the exact p where it is cheap and the saddlepoint (trusted to a factor of 10)
elsewhere; only pairs whose Holm decision those intervals leave open are counted exactly or bracketed
(:func:`comparna.rna.verdict_statistics.pair_pvalues`). These tests hold that shortcut to the decisions of
the exact p of every pair, and Holm's interval sides to the definition.
"""

from __future__ import annotations

import numpy as np
import pytest

from comparna.rna import signflip
from comparna.rna.clustered import _signed_rank_sums
from comparna.rna.signflip import _bracket, _dp_cost, _finest_grain, resampled_pvalues, sign_flip_test
from comparna.rna.statistics import holm_adjust, holm_rows, holm_sides
from comparna.rna.verdict_statistics import UNDECIDED, pair_pvalues

ALPHA = 0.001


def _family_sums(rng, families: int, shift: float) -> np.ndarray:
    sizes = np.minimum(1 + rng.pareto(1.1, families).astype(int), 60)
    codes = np.repeat(np.arange(families), sizes)
    d = np.round(shift + rng.normal(0, rng.uniform(0.02, 0.1), families)[codes]
                 + rng.normal(0, 0.1, codes.size), 3)
    sums, _ = _signed_rank_sums(d, codes)
    return np.asarray(sums, dtype=np.int64)


def test_holm_rows_is_holm_of_every_row():
    rng = np.random.default_rng(1)
    p = rng.random((30, 17)) ** 4
    expected = np.vstack([holm_adjust(row) for row in p])
    assert np.allclose(holm_rows(p), expected)


def test_holm_sides_bracket_the_rejections_of_every_p_inside_the_intervals():
    rng = np.random.default_rng(2)
    for _ in range(300):
        n = int(rng.integers(2, 40))
        p = 10 ** rng.uniform(-8, 0, n)
        low = p / 10 ** rng.uniform(0, 1.5, n) * (rng.random(n) < 0.5) + p * (rng.random(n) >= 0.5) * 0
        low = np.where(low > 0, low, p)
        high = np.minimum(1.0, p * 10 ** rng.uniform(0, 1.5, n))
        certain, possible = holm_sides(low, high, ALPHA)
        # any p-vector inside the intervals rejects at least the certain and at most the possible ones
        for _ in range(5):
            inside = low * (high / low) ** rng.random(n)
            rejected = holm_adjust(inside) < ALPHA
            assert not (certain & ~rejected).any()
            assert not (rejected & ~possible).any()
        assert not (certain & ~possible).any()


def test_refined_pvalues_decide_every_pair_as_the_exact_p_of_every_pair_does():
    """Dear pairs (the saddlepoint path), many near the Holm thresholds: the refined decisions equal those
    of exact p-values everywhere they are not "undecided", and no pair is left undecided here."""
    rng = np.random.default_rng(35)
    sums = [_family_sums(rng, int(rng.integers(120, 260)), shift) for shift in rng.uniform(0, 0.06, 120)]
    costs = [_dp_cost(np.abs(s[s != 0]), (int(np.abs(s).sum()) - abs(int(s.sum()))) // 2) for s in sums]
    assert sum(c > signflip.FIRST_BUDGET for c in costs) > 60  # most of them take the saddlepoint first
    exact = np.array([sign_flip_test(s).p for s in sums])
    p, method, low, high = pair_pvalues(sums, alpha=ALPHA)
    assert ((low <= exact * (1 + 1e-9)) & (exact <= high * (1 + 1e-9))).all()
    decided = method != UNDECIDED
    assert decided.all()
    truth = holm_adjust(exact) < ALPHA
    assert 10 < truth.sum() < len(sums) - 10  # the cut lies inside the pairs, not at an end
    certain, _ = holm_sides(low, high, ALPHA)
    assert (certain == truth).all()
    assert ((holm_adjust(p) < ALPHA) == truth).all()  # the shown p's adjusted values say the same
    assert (method == "saddlepoint").sum() > 0  # and the far pairs were never counted


def test_a_pair_whose_decision_stays_open_is_undecided_never_guessed(monkeypatch):
    rng = np.random.default_rng(7)
    sums = [_family_sums(rng, 200, shift) for shift in np.linspace(0.0, 0.05, 40)]
    # no budget to refine with: what the saddlepoint's factor of 10 leaves open stays open
    monkeypatch.setattr(signflip, "EXACT_BUDGET", 0)
    monkeypatch.setattr(signflip, "HARD_BUDGET", 0)
    p, method, low, high = pair_pvalues(sums, alpha=ALPHA)
    certain, possible = holm_sides(low, high, ALPHA)
    assert ((method == UNDECIDED) == (possible & ~certain)).all()
    assert (method == UNDECIDED).any()


def test_a_second_coarser_bracket_never_widens_the_first():
    rng = np.random.default_rng(11)
    sums = _family_sums(rng, 250, 0.03)
    a = np.abs(sums[sums != 0])
    m = (int(a.sum()) - abs(int(sums.sum()))) // 2
    cost = _dp_cost(a, m)
    budget = cost // 40
    approx = signflip.first_pass(sums).p
    first_low, first_high, spent = _bracket(a, m, _finest_grain(a, m, budget), approx)
    # the hard budget leaves less than the first bracket spent: the second is coarser
    out = sign_flip_test(sums, band=None, budget=budget, hard_budget=spent + budget // 20)
    exact = sign_flip_test(sums).p
    assert out.low >= first_low and out.high <= first_high
    assert out.low <= exact * (1 + 1e-9) and exact <= out.high * (1 + 1e-9)


def test_the_bootstrap_counts_only_open_cells_and_decides_as_counting_every_near_cell():
    rng = np.random.default_rng(5)
    families, pairs = 60, 40
    signed = np.zeros((families, pairs))
    for k in range(pairs):
        sizes = np.minimum(1 + rng.pareto(1.2, families).astype(int), 30)
        codes = np.repeat(np.arange(families), sizes)
        d = np.round(0.002 * k + rng.normal(0, 0.05, families)[codes] + rng.normal(0, 0.1, codes.size), 3)
        sums, _ = _signed_rank_sums(d, codes)
        signed[np.unique(codes[d != 0]), k] = np.asarray(sums) / 2
    weights = rng.multinomial(families, np.ones(families) / families, size=80)
    band = (ALPHA / pairs, ALPHA)
    every = resampled_pvalues(signed, weights, band=band)
    counted = {"n": 0}
    real = signflip.subset_count_below

    def counting(*args, **kwargs):
        counted["n"] += 1
        return real(*args, **kwargs)

    signflip.subset_count_below = counting
    try:
        lazy = resampled_pvalues(signed, weights, band=band, holm_alpha=ALPHA)
    finally:
        signflip.subset_count_below = real
    assert (holm_rows(every) < ALPHA).sum() > 0
    assert ((holm_rows(every) < ALPHA) == (holm_rows(lazy) < ALPHA)).all()
    near = ((every >= band[0] / 10) & (every <= band[1] * 10)).sum()
    assert counted["n"] < near


@pytest.mark.parametrize("more", [0, 25])
def test_tests_left_out_of_the_bootstrap_core_still_count_in_holm(more):
    rng = np.random.default_rng(9)
    signed = rng.integers(-400, 900, size=(50, 6)) / 2.0
    weights = rng.multinomial(50, np.ones(50) / 50, size=40)
    band = (ALPHA / (6 + more), ALPHA)
    lazy = resampled_pvalues(signed, weights, band=band, holm_alpha=ALPHA, more_tests=more)
    every = resampled_pvalues(signed, weights, band=band)
    padded = lambda x: np.hstack([x, np.ones((x.shape[0], more))])  # noqa: E731
    assert ((holm_rows(padded(every)) < ALPHA) == (holm_rows(padded(lazy)) < ALPHA)).all()


def test_a_floored_subset_skips_the_bootstrap_and_gets_the_intervals_the_bootstrap_gives():
    from bench.bench_ranking import synthetic_table
    from comparna.rna.rank_intervals import rank_intervals
    from comparna.rna.ranking_report import ranking_report

    table = synthetic_table(5, 180, 3)
    clusters = [f"family{k % 9}" for k in range(180)]  # ArchiveII's nine: 10 pairs · 2/2⁹ > α
    report = ranking_report(table, seed=4, clusters=clusters, with_2013=False, robustness=False)
    assert report["decisions"]["floor"]["fires"]
    assert report["rank_interval"]["resamples"] == 0 and "floor" in report["rank_interval"]["rule"]
    low, high = rank_intervals(table, clusters=clusters, seed=4, resamples=300)
    by_name = {row["method"]: (row["rank_low"], row["rank_high"]) for row in report["methods"]}
    assert [by_name[name] for name in table.methods] == list(zip(low.tolist(), high.tolist(), strict=True))
    assert set(by_name.values()) == {(1, 5)}
