"""The CompaRNA 2013 protocol engine (40 × 90 % resamples, Wilcoxon on the paired MCCs; a labelled view since
issue 27) against a straightforward reference (loop + scipy.stats.wilcoxon). The primary, target-level verdict
is tested in test_target_verdicts.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from comparna.rna import metrics
from comparna.rna.ranking import (
    CountsTable,
    competition_ranks,
    draw_exclusions,
    first_distinct,
    kept_indices,
    pair_rng,
    pairwise_ranking,
    robustness_ranking,
    subsample_size,
    wilcoxon_pvalues,
)


def random_table(n_methods: int, n_targets: int, seed: int, missing: float = 0.15) -> CountsTable:
    rng = np.random.default_rng(seed)
    length = rng.integers(20, 400, n_targets)
    reference = rng.binomial(length // 2, 0.5) + 1
    candidates = length * (length - 1) // 2
    skill = rng.uniform(0.2, 0.9, n_methods)
    tp = rng.binomial(np.broadcast_to(reference, (n_methods, n_targets)), skill[:, None])
    fp = rng.binomial(np.broadcast_to(reference, (n_methods, n_targets)), 0.3)
    compatible = rng.binomial(fp, 0.4)
    fn = reference - tp
    tn = candidates - tp - fn - fp
    present = rng.random((n_methods, n_targets)) > missing
    counts = np.stack([tp, fn, fp, compatible, tn], axis=-1) * present[..., None]
    return CountsTable(tuple(f"m{i}" for i in range(n_methods)), tuple(f"t{j}" for j in range(n_targets)),
                       counts.astype(np.int64), present)


def reference_verdict(table: CountsTable, a: int, b: int, seed: int) -> tuple[str, float]:
    """Straightforward CompaRNA pair comparison, reusing only the engine's random draws."""
    common = [t for t in range(len(table.targets)) if table.present[a, t] and table.present[b, t]]
    if len(common) < 10:
        return "?", float("nan")
    n = len(common)
    rng = pair_rng(seed, table.methods[a], table.methods[b])
    kept = kept_indices(draw_exclusions(rng, n, n - subsample_size(n), 40), n)
    mcc_a, mcc_b = [], []
    for row in kept:
        pooled_a = [0] * 5
        pooled_b = [0] * 5
        for i in row:
            for k in range(5):
                pooled_a[k] += int(table.counts[a, common[i], k])
                pooled_b[k] += int(table.counts[b, common[i], k])
        mcc_a.append(metrics.mcc(*pooled_a))
        mcc_b.append(metrics.mcc(*pooled_b))
    if all(x == y for x, y in zip(mcc_a, mcc_b, strict=True)):
        return "=", float("nan")
    p = stats.wilcoxon(mcc_a, mcc_b).pvalue
    if p < 0.001:
        return ("+" if np.mean(np.subtract(mcc_a, mcc_b)) > 0 else "-"), p
    return "=", p


@pytest.fixture(scope="module")
def table() -> CountsTable:
    t = random_table(9, 70, seed=11)
    # a pair with exactly 10 and one with 9 common targets, and a twin with identical counts (all diffs 0)
    present = t.present.copy()
    counts = t.counts.copy()
    present[7] = False
    present[7, :10] = True
    present[8] = False
    present[8, 10:19] = True
    present[0, :19] = True
    counts[7, :10] = counts[0, :10]
    counts[8, 10:19] = counts[0, 10:19]
    counts[1] = counts[0]
    present[1] = present[0]
    return CountsTable(t.methods, t.targets, counts * present[..., None], present)


def test_engine_matches_reference_loop_with_scipy(table):
    result = pairwise_ranking(table, seed=7)
    m = len(table.methods)
    seen = set()
    for a in range(m):
        for b in range(a + 1, m):
            verdict, p = reference_verdict(table, a, b, seed=7)
            seen.add(verdict)
            assert result.verdicts[a, b] == verdict, (a, b)
            if np.isnan(p):
                assert np.isnan(result.p_values[a, b])
            else:
                assert result.p_values[a, b] == pytest.approx(p, rel=1e-9)
    assert {"+", "-", "=", "?"} <= seen


def test_unknown_under_ten_common_targets(table):
    result = pairwise_ranking(table, seed=1)
    assert result.common[7, 0] == 10 and result.verdicts[7, 0] != "?"
    assert result.common[8, 0] == 9 and result.verdicts[8, 0] == "?" and result.verdicts[0, 8] == "?"
    assert result.common[7, 8] == 0 and result.verdicts[7, 8] == "?"


def test_identical_methods_draw(table):
    result = pairwise_ranking(table, seed=1)
    assert result.verdicts[0, 1] == "=" and result.verdicts[1, 0] == "="


def test_verdict_matrix_is_antisymmetric_and_tallies_add_up(table):
    result = pairwise_ranking(table, seed=3)
    v = result.verdicts
    flip = {"+": "-", "-": "+", "=": "=", "?": "?", "": ""}
    assert all(v[b, a] == flip[v[a, b]] for a in range(len(v)) for b in range(len(v)))
    assert result.wins.sum() == result.losses.sum()
    assert np.all(result.wins + result.losses + result.draws + result.unknown == len(v) - 1)
    assert np.array_equal(result.common, result.common.T)


def test_same_seed_same_result_other_seed_other_draws(table):
    first = pairwise_ranking(table, seed=42)
    again = pairwise_ranking(table, seed=42)
    other = pairwise_ranking(table, seed=43)
    assert np.array_equal(first.verdicts, again.verdicts)
    assert np.array_equal(first.p_values, again.p_values, equal_nan=True)
    assert not np.array_equal(first.p_values, other.p_values, equal_nan=True)


def test_adding_a_method_keeps_other_pairs(table):
    small = table.select_methods(table.methods[:5])
    full = pairwise_ranking(table, seed=5)
    part = pairwise_ranking(small, seed=5)
    assert np.array_equal(part.verdicts, full.verdicts[:5, :5])
    assert np.array_equal(part.p_values, full.p_values[:5, :5], equal_nan=True)


def test_clear_winner_wins_everything():
    t = random_table(4, 60, seed=2, missing=0.0)
    counts = t.counts.copy()
    counts[3, :, 0] = counts[3, :, 0] + counts[3, :, 1]  # perfect sensitivity
    counts[3, :, 1] = 0
    counts[3, :, 4] += counts[3, :, 2]  # and no false positives
    counts[3, :, 2:4] = 0
    result = pairwise_ranking(CountsTable(t.methods, t.targets, counts, t.present), seed=0)
    assert result.wins[3] == 3 and result.ranks[3] == 1


def test_wilcoxon_vectorised_matches_scipy_with_and_without_ties():
    rng = np.random.default_rng(0)
    tied_x = rng.integers(0, 5, (200, 40)) / 8
    tied_y = rng.integers(0, 5, (200, 40)) / 8
    cont_x = rng.normal(size=(200, 40))
    cont_y = rng.normal(size=(200, 40)) + rng.uniform(0, 1, (200, 1))
    for x, y in ((tied_x, tied_y), (cont_x, cont_y)):
        ours = wilcoxon_pvalues(x, y)
        ref = np.array([stats.wilcoxon(a, b).pvalue for a, b in zip(x, y, strict=True)])
        np.testing.assert_allclose(ours, ref, rtol=1e-10)
    zero = np.zeros((1, 40))
    assert np.isnan(wilcoxon_pvalues(zero, zero)[0])


def test_exclusions_are_distinct_uniform_and_sized():
    assert [subsample_size(n) for n in (10, 11, 19, 20, 25, 2000)] == [9, 9, 17, 18, 22, 1800]
    rng = np.random.default_rng(0)
    drawn = draw_exclusions(rng, 12, 4, 6000)
    assert drawn.shape == (6000, 4)
    assert all(len(set(row)) == 4 for row in drawn.tolist())
    freq = np.bincount(drawn.ravel(), minlength=12) / drawn.size
    assert np.all(np.abs(freq - 1 / 12) < 0.01)
    # every one of the C(5, 2) = 10 subsets appears about equally often
    pairs = draw_exclusions(np.random.default_rng(1), 5, 2, 20000)
    keys = np.sort(pairs, axis=1) @ [5, 1]
    counts = np.unique(keys, return_counts=True)[1]
    assert counts.size == 10 and np.all(np.abs(counts / 20000 - 0.1) < 0.01)


def test_first_distinct_keeps_draw_order_and_flags_short_rows():
    draws = np.array([[3, 3, 1, 3, 2, 0], [5, 5, 5, 5, 4, 9], [7, 1, 7, 1, 0, 0]])
    values, sizes, complete = first_distinct(draws, np.array([6, 6, 4]), np.array([3, 3, 2]))
    assert values.tolist() == [3, 1, 2, 5, 4, 9, 7, 1]
    assert sizes.tolist() == [3, 3, 2] and complete.tolist() == [True, True, True]
    _, _, complete = first_distinct(draws, np.array([6, 3, 6]), np.array([3, 3, 2]))
    assert complete.tolist() == [True, False, True]


def test_competition_ranks():
    assert competition_ranks(np.array([5, 5, 3, 7, 0])).tolist() == [2, 2, 4, 1, 5]


def test_robustness_counts_missing_as_empty_structure():
    counts = np.array([[[3, 1, 1, 0, 40], [2, 2, 0, 0, 96]], [[4, 0, 0, 0, 41], [0, 0, 0, 0, 0]]])
    present = np.array([[True, True], [True, False]])
    table = CountsTable(("a", "b"), ("x", "y"), counts, present)
    result = robustness_ranking(table)
    # b's missing prediction of y: TP 0, FN 4 (y's reference pairs), FP 0, TN 100 - 4
    assert result.mcc[1] == pytest.approx(metrics.mcc(4, 4, 0, 0, 41 + 96))
    assert result.mcc[0] == pytest.approx(metrics.mcc(5, 3, 1, 0, 136))
    assert result.coverage.tolist() == [2, 1]


def test_robustness_rejects_inconsistent_targets():
    counts = np.array([[[3, 1, 1, 0, 40]], [[3, 2, 1, 0, 40]]])
    table = CountsTable(("a", "b"), ("x",), counts, np.ones((2, 1), bool))
    with pytest.raises(ValueError, match="target x"):
        robustness_ranking(table)
