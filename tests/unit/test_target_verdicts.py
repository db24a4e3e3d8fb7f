"""The primary, target-level verdict (issue 27): the clustered Wilcoxon signed-rank test against a brute-force
enumeration of family sign flips, its type-I error under the null, Holm control, the power-aware "?", rank
intervals and the metric on the targets that decided the order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from comparna.rna import thresholds
from comparna.rna.clustered import (
    _convolution_pvalue,
    _enumerated_pvalue,
    _signed_rank_sums,
    clustered_signed_rank_test,
)
from comparna.rna.ranking import (
    CountsTable,
    compare_protocols,
    per_target_mcc,
    protocol_view,
    rank_intervals,
    ranking_report,
    target_level_ranking,
)


def brute_force_p(d: np.ndarray, labels: list[str]) -> float:
    """Independent reimplementation: every one of the 2^C joint sign flips of the families, enumerated."""
    keep = d != 0
    d, labels = d[keep], [lab for lab, k in zip(labels, keep, strict=True) if k]
    ranks = stats.rankdata(np.abs(d))
    signed = np.sign(d) * ranks
    families = sorted(set(labels))
    sums = [sum(s for s, lab in zip(signed, labels, strict=True) if lab == f) for f in families]
    observed = abs(sum(sums))
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(families)):
        if abs(sum(e * s for e, s in zip(signs, sums, strict=True))) >= observed - 1e-9:
            hits += 1
    return hits / 2 ** len(families)


@pytest.mark.parametrize("seed", range(12))
def test_clustered_signed_rank_equals_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 40))
    n_families = int(rng.integers(2, 12))
    labels = [f"F{int(x)}" for x in rng.integers(0, n_families, n)]
    # quantised scores give ties and zero differences, as per-target MCCs of short RNAs do
    a = np.round(rng.uniform(0, 1, n) * 8) / 8
    b = np.round((a + rng.normal(0.05 * (seed % 3), 0.2, n)).clip(0, 1) * 8) / 8
    test = clustered_signed_rank_test(a, b, labels)
    assert test.method == "exact"
    assert test.pvalue == pytest.approx(brute_force_p(a - b, labels), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("seed", range(6))
def test_both_exact_paths_equal_brute_force(seed):
    """Enumeration (≤ 20 families, any number of targets) and convolution (more families) count the same
    2^C sign flips as the brute force."""
    rng = np.random.default_rng(100 + seed)
    n, families = 60, int(rng.integers(3, 13))
    labels = [f"F{int(x)}" for x in rng.integers(0, families, n)]
    d = np.round(rng.normal(0.02, 0.2, n) * 16) / 16
    codes = np.unique(labels, return_inverse=True)[1]
    sums, _ = _signed_rank_sums(d, codes)
    weights, observed = np.abs(sums[sums != 0]), abs(int(sums.sum()))
    expected = brute_force_p(d, labels)
    assert _enumerated_pvalue(weights, observed) == pytest.approx(expected, rel=1e-12)
    assert _convolution_pvalue(weights, observed) == pytest.approx(expected, rel=1e-9)


def test_many_targets_in_few_families_stay_exact():
    """2000 targets in 15 families: still the exact 2^15 flips (the normal form is for many families)."""
    rng = np.random.default_rng(8)
    labels = [f"F{int(x)}" for x in rng.integers(0, 15, 2000)]
    test = clustered_signed_rank_test(rng.normal(0.01, 0.2, 2000), np.zeros(2000), labels)
    assert test.method == "exact" and test.clusters == 15 and test.pvalue >= 2 / 2**15


def test_one_target_per_family_is_the_exact_wilcoxon_test():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.normal(size=25), rng.normal(0.3, 1, size=25)
        assert clustered_signed_rank_test(a, b).pvalue == pytest.approx(stats.wilcoxon(a, b).pvalue, rel=1e-9)


def test_many_families_get_the_exact_sign_flip_null_not_the_normal_form():
    """200 families: the p is the count of the 2^200 family sign flips (issue 35), checked against a plain
    convolution of the family sums; the normal form of Rosner, Glynn & Lee is gone."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=400), rng.normal(0.1, 1, size=400)
    labels = [f"F{i % 200}" for i in range(400)]
    test = clustered_signed_rank_test(a, b, labels)
    assert test.method == "exact" and test.clusters == 200
    d = a - b
    signed = np.rint(2 * np.sign(d) * stats.rankdata(np.abs(d))).astype(np.int64)
    sums = np.bincount(np.arange(400) % 200, weights=signed).astype(np.int64)
    pmf = np.ones(1)
    for w in np.abs(sums[sums != 0]):
        pmf = np.convolve(pmf, np.r_[0.5, np.zeros(int(w) - 1), 0.5]) if w else pmf
    support = np.arange(pmf.size) * 2 - np.abs(sums).sum()
    assert test.pvalue == pytest.approx(pmf[np.abs(support) >= abs(sums.sum())].sum(), rel=1e-9)
    # never 0, however far out the statistic is
    huge = clustered_signed_rank_test(np.arange(1, 5001) / 5000, np.zeros(5000))
    assert huge.method == "exact" and 0 < huge.pvalue < 1e-300


def _null_pairs(rng, pairs: int, n: int, families: int, spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-target differences of ``pairs`` null comparisons: a family effect (symmetric about 0, shared by
    the family's targets) plus target noise; the two methods are equally good."""
    codes = np.sort(rng.integers(0, families, n))
    family_effect = rng.normal(0, spread, (pairs, families))[:, codes]
    return family_effect + rng.normal(0, 0.05, (pairs, n)), codes


def test_type_one_error_at_alpha_under_the_null_is_controlled_and_the_naive_test_is_not():
    rng = np.random.default_rng(2027)
    alpha = thresholds.ALPHA
    # exact regime: 2000 null pairs of 40 targets in 12 families with a strong family effect
    d, codes = _null_pairs(rng, 2000, 40, 12, spread=0.2)
    p = np.array([clustered_signed_rank_test(x, np.zeros_like(x), codes).pvalue for x in d])
    assert (p < alpha).mean() <= 0.002
    # the unclustered Wilcoxon test on the same differences treats a family as many independent targets
    naive = np.array([stats.wilcoxon(x).pvalue for x in d[:300]])
    assert (naive < alpha).mean() > 0.05
    # many families: 2000 null pairs of 300 targets in 150 families (once the normal form's regime)
    d, codes = _null_pairs(rng, 2000, 300, 150, spread=0.1)
    tests = [clustered_signed_rank_test(x, np.zeros_like(x), codes, band=(alpha, alpha)) for x in d]
    assert {t.method for t in tests} <= {"exact", "saddlepoint"}
    assert np.mean([t.pvalue < alpha for t in tests]) <= 0.002


def rows_7_of_12(delta: int, n: int = 12, better: int = 7) -> list[tuple]:
    """A better than B on ``better`` targets and worse on the rest, by ``delta`` true pairs of 30."""
    out = []
    length = 100
    candidates = length * (length - 1) // 2
    for t in range(n):
        tp_b = 20
        tp_a = tp_b + delta if t < better else tp_b - delta
        for name, tp in (("A", tp_a), ("B", tp_b)):
            out.append((name, f"T{t}", tp, 30 - tp, 5, 0, candidates - 30 - 5))
    return out


def test_seven_better_five_worse_is_a_draw_where_the_2013_protocol_says_win():
    report = ranking_report(CountsTable.from_rows(rows_7_of_12(1)), seed=0)
    assert report["verdicts"]["A"]["B"] == "="
    assert report["p_values"]["A"]["B"] > 0.4
    # the 2013 protocol's 40 pseudo-replicates of the same 12 targets: "A wins at p < 0.001"
    old = report["protocol_2013"]
    assert old["verdicts"]["A"]["B"] == "+" and old["p_values"]["A"]["B"] < thresholds.ALPHA
    assert protocol_view(report, "2013")["verdicts"]["A"]["B"] == "+"


def test_large_differences_on_few_targets_are_unknown_not_a_draw():
    """Not significant, and the 90 % interval of 12 targets with ±0.25 MCC differences is far wider than
    ±0.02: "?" (open), with the further targets that would decide it. (Issue 35: was the power rule.)"""
    report = ranking_report(CountsTable.from_rows(rows_7_of_12(8)), seed=0)
    assert report["verdicts"]["A"]["B"] == "?" and report["verdict_reasons"]["A"]["B"] == "open"
    low, high = report["mean_interval"]["A"]["B"]
    assert low < -thresholds.EQUIVALENCE_DELTA or high > thresholds.EQUIVALENCE_DELTA
    more_targets, more_families = report["to_decide"]["A"]["B"]
    assert more_targets > 12 and more_families > 0
    assert report["methods"][0]["unknown"] == 1


def test_better_on_every_one_of_60_targets_wins_but_not_in_three_families():
    table = CountsTable.from_rows(rows_7_of_12(2, n=60, better=60))
    report = ranking_report(table, seed=0)
    assert report["verdicts"]["A"]["B"] == "+" and report["methods"][0]["method"] == "A"
    assert report["p_adjusted"]["A"]["B"] < 1e-15
    # the same 60 targets from three families: three independent signs, p = 2/8 at best
    families = [f"F{t % 3}" for t in range(60)]
    clustered = target_level_ranking(table, clusters=families)
    assert clustered.p_values[0, 1] == pytest.approx(0.25)
    assert clustered.verdicts[0, 1] != "+" and clustered.clusters[0, 1] == 3


def test_holm_adjustment_across_the_matrix_and_antisymmetry():
    rng = np.random.default_rng(4)
    methods, targets = 6, 80
    skill = np.linspace(0.3, 0.8, methods)
    rows = []
    for t in range(targets):
        ref = int(rng.integers(10, 40))
        for m in range(methods):
            if rng.random() < 0.1:
                continue
            tp = int(rng.binomial(ref, skill[m]))
            rows.append((f"M{m}", f"T{t}", tp, ref - tp, 4, 1, 3000))
    table = CountsTable.from_rows(rows)
    result = target_level_ranking(table, clusters=[f"F{t % 20}" for t in range(targets)])
    m = len(table.methods)
    upper = [(a, b) for a in range(m) for b in range(a + 1, m)]
    raw = np.array([result.p_values[a, b] for a, b in upper])
    adjusted = np.array([result.p_adjusted[a, b] for a, b in upper])
    assert np.all(adjusted >= raw - 1e-15)
    order = np.argsort(raw)
    assert adjusted[order[0]] == pytest.approx(min(1.0, len(upper) * raw[order[0]]))
    flip = {"+": "-", "-": "+", "=": "=", "?": "?", "": ""}
    v = result.verdicts
    assert all(v[b, a] == flip[v[a, b]] for a in range(m) for b in range(m))
    for a, b in upper:
        if v[a, b] in "+-":
            assert result.p_adjusted[a, b] < thresholds.ALPHA
    assert result.ranks[table.methods.index("M5")] == 1


def test_rank_intervals_are_seeded_cover_the_rank_and_shrink_with_evidence():
    table = CountsTable.from_rows(rows_7_of_12(2, n=60, better=60))
    low, high = rank_intervals(table, seed=3, resamples=200)
    assert list(low) == [1, 2] and list(high) == [1, 2]
    rng = np.random.default_rng(9)
    rows = []
    for t in range(40):
        for m, s in enumerate((0.5, 0.55, 0.6, 0.9)):
            tp = int(rng.binomial(30, s))
            rows.append((f"M{m}", f"T{t}", tp, 30 - tp, 5, 0, 4000))
    table = CountsTable.from_rows(rows)
    families = [f"F{t % 40}" for t in range(40)]
    one = rank_intervals(table, clusters=families, seed=1, resamples=300)
    two = rank_intervals(table, clusters=families, seed=1, resamples=300)
    assert all(np.array_equal(x, y) for x, y in zip(one, two, strict=True))
    result = target_level_ranking(table, clusters=families)
    best = table.methods.index("M3")
    assert one[0][best] == one[1][best] == result.ranks[best] == 1
    # the three close methods: an interval, not a point
    close = [table.methods.index(x) for x in ("M0", "M1", "M2")]
    assert any(one[1][i] > one[0][i] for i in close)
    # ten families are ten signs: the smallest two-sided p is 2/2^10 > 0.001, so nobody can win, and the
    # order (everyone first) is as certain as it is uninformative
    ten = [f"F{t % 10}" for t in range(40)]
    assert target_level_ranking(table, clusters=ten).wins.sum() == 0


def test_metric_column_is_on_the_targets_that_decided_the_order():
    rows = rows_7_of_12(2, n=30, better=30)
    # C predicted only 5 of the targets: "?" with A and B, so those targets decide nothing of C
    rows += [("C", f"T{t}", 29, 1, 0, 0, 4915) for t in range(5)]
    table = CountsTable.from_rows(rows)
    report = ranking_report(table, seed=0)
    by = {r["method"]: r for r in report["methods"]}
    assert by["C"]["decided_mcc"] is None and by["C"]["decided_targets"] == 0
    scores = per_target_mcc(table)
    a = table.methods.index("A")
    assert by["A"]["decided_targets"] == 30
    assert by["A"]["decided_mcc"] == pytest.approx(scores[a, :30].mean())
    rows = compare_protocols(report, top=2)
    assert rows[0]["target"]["method"] == "A" and rows[0]["protocol_2013"]["method"] == "A"
    assert rows[0]["target"]["rank_low"] == 1


def test_rank_intervals_respect_the_exact_floor_of_few_families():
    """Ten families: no win is possible in the primary verdict (floor 2/2^10 > 0.001), so no resample may
    create one either, and the two methods, tied, can each be first or second: [1, 2], not [1, 1]
    (issue 35: was [1, 1])."""
    rng = np.random.default_rng(9)
    rows = []
    for t in range(40):
        for m, s in enumerate((0.2, 0.9)):
            tp = int(rng.binomial(30, s))
            rows.append((f"M{m}", f"T{t}", tp, 30 - tp, 5, 0, 4000))
    table = CountsTable.from_rows(rows)
    ten = [f"F{t % 10}" for t in range(40)]
    result = target_level_ranking(table, clusters=ten)
    assert result.wins.sum() == 0 and result.reasons[0, 1] == "floor" and result.floor["fires"]
    low, high = rank_intervals(table, clusters=ten, seed=2, resamples=300)
    assert list(low) == [1, 1] and list(high) == [2, 2]
