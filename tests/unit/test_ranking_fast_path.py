"""The vectorised ranking statistics (issue 28) equal the pair-at-a-time implementations they replaced to
the last bit: the same verdicts, p-values, ranks, intervals and bootstrap draws on random tables with ties,
zero differences, missing predictions and every kind of family structure (none, a few families — exact
enumeration —, tens — convolution —, many — the normal form)."""

from __future__ import annotations

import numpy as np
import pytest

from comparna.rna import ranking
from comparna.rna.clustered import _multiplicities, cluster_bootstrap_means
from comparna.rna.pair_statistics import pairwise_statistics
from comparna.rna.ranking import (
    CountsTable,
    rank_intervals,
    ranking_report,
    target_level_ranking,
)
from comparna.rna.statistics import bootstrap_means
from tests.unit import ranking_reference as ref


def random_table(seed: int, methods: int, targets: int, *, coverage: float = 0.85, coarse: bool = False):
    """Counts of ``methods`` methods of random quality on ``targets`` targets; ``coarse``: few distinct
    values, so that per-target MCCs tie and differences are exactly 0 often."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(12, 40 if coarse else 300, targets)
    ref_pairs = np.maximum(1, (lengths * 0.28).astype(np.int64))
    counts = np.zeros((methods, targets, 5), dtype=np.int64)
    for m in range(methods):
        quality = rng.uniform(0.3, 0.9)
        tp = rng.binomial(ref_pairs, quality)
        fp = rng.binomial(np.maximum(ref_pairs - tp, 1), 0.5)
        eps = rng.binomial(fp, 0.3)
        counts[m, :, 0], counts[m, :, 1], counts[m, :, 2], counts[m, :, 3] = tp, ref_pairs - tp, fp, eps
        counts[m, :, 4] = lengths * (lengths - 1) // 2 - ref_pairs - fp
    present = rng.random((methods, targets)) < coverage
    if methods > 2:
        present[-1] = rng.random(targets) < 0.3  # a method still filling: few common targets
    counts[~present] = 0
    table = CountsTable(
        tuple(f"m{i:02d}" for i in range(methods)), tuple(f"t{i}" for i in range(targets)), counts, present
    )
    return table


def family_labels(seed: int, targets: int, kind: str) -> list[str] | None:
    rng = np.random.default_rng(seed + 1000)
    if kind == "none":
        return None
    if kind == "few":
        return [f"F{i}" for i in rng.integers(0, 6, targets)]
    if kind == "tens":
        return [f"F{i}" for i in rng.integers(0, 30, targets)]
    # families for most targets, the rest their own cluster (the scale data's shape)
    return [f"F{rng.integers(0, 8)}" if rng.random() < 0.6 else f"seq:{k}" for k in range(targets)]


CASES = [
    (1, 6, 40, "few", False),
    (2, 5, 120, "tens", True),
    (3, 8, 200, "many", False),
    (4, 4, 60, "none", True),
    (5, 7, 300, "many", True),
    (6, 3, 25, "few", True),
    (7, 9, 150, "tens", False),
]


def assert_same(a, b):
    assert np.asarray(a).dtype == np.asarray(b).dtype or np.asarray(a).dtype.kind == np.asarray(b).dtype.kind
    assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f")


@pytest.mark.parametrize(("seed", "methods", "targets", "families", "coarse"), CASES)
def test_target_level_ranking_equals_the_pair_by_pair_reference(seed, methods, targets, families, coarse):
    table = random_table(seed, methods, targets, coarse=coarse)
    labels = family_labels(seed, targets, families)
    new = target_level_ranking(table, clusters=labels, seed=seed)
    old = ref.target_level_ranking(table, clusters=labels, seed=seed)
    for name in (
        "verdicts",
        "common",
        "p_values",
        "mean_difference",
        "wins",
        "losses",
        "draws",
        "unknown",
        "ranks",
        "p_adjusted",
        "reasons",
        "clusters",
        "interval_low",
        "interval_high",
    ):
        assert_same(getattr(new, name), getattr(old, name))


@pytest.mark.parametrize(("seed", "methods", "targets", "families", "coarse"), CASES)
def test_rank_intervals_equal_the_pair_by_pair_reference(seed, methods, targets, families, coarse):
    table = random_table(seed, methods, targets, coarse=coarse)
    labels = family_labels(seed, targets, families)
    new = rank_intervals(table, clusters=labels, seed=seed, resamples=300)
    old = ref.rank_intervals(table, clusters=labels, seed=seed, resamples=300)
    assert_same(new[0], old[0])
    assert_same(new[1], old[1])


def test_ranking_report_shares_one_pass_and_equals_separate_calls():
    table = random_table(11, 6, 180)
    labels = family_labels(11, 180, "many")
    report = ranking_report(table, seed=4, clusters=labels, rank_resamples=200)
    old = ref.target_level_ranking(table, clusters=labels, seed=4)
    low, high = ref.rank_intervals(table, clusters=labels, seed=4, resamples=200)
    rows = {row["method"]: row for row in report["methods"]}
    for i, name in enumerate(table.methods):
        assert rows[name]["rank"] == old.ranks[i]
        assert (rows[name]["rank_low"], rows[name]["rank_high"]) == (low[i], high[i])
    assert report["verdicts"] == old.verdict_dict()


def test_pair_data_must_match_the_pairs():
    table = random_table(12, 4, 50)
    data = ranking.pair_signed_ranks(table, np.arange(50), [(0, 1)])
    with pytest.raises(ValueError, match="other pairs"):
        target_level_ranking(table, pair_data=data)


@pytest.mark.parametrize(("seed", "methods", "targets", "families", "coarse"), CASES)
def test_pairwise_statistics_equal_the_pair_by_pair_reference(seed, methods, targets, families, coarse):
    table = random_table(seed, methods, targets, coarse=coarse)
    labels = family_labels(seed, targets, families) or [f"seq:{k}" for k in range(targets)]
    new = pairwise_statistics(table, labels, seed=seed, resamples=250)
    old = ref.pairwise_statistics(table, labels, seed=seed, resamples=250)
    assert new == old


@pytest.mark.parametrize("n", [1, 7, 100, 2047])
def test_bootstrap_draws_equal_the_reference(n):
    values = np.random.default_rng(n).random(n)
    assert_same(
        bootstrap_means(values, resamples=2300, seed=5), ref.bootstrap_means(values, resamples=2300, seed=5)
    )
    paired = np.random.default_rng(n + 1).random((2, n))
    assert_same(
        bootstrap_means(paired, resamples=1100, seed=6), ref.bootstrap_means(paired, resamples=1100, seed=6)
    )
    new = np.concatenate(list(_multiplicities(np.random.default_rng(3), n, 2100)))
    old = np.concatenate(list(ref._multiplicities(np.random.default_rng(3), n, 2100)))
    assert_same(new, old)
    labels = [f"F{k % 13}" for k in range(n)]
    assert_same(
        cluster_bootstrap_means(values, labels, resamples=1500, seed=2),
        ref.cluster_bootstrap_means(values, labels, resamples=1500, seed=2),
    )


def test_compute_report_does_not_depend_on_its_threads(monkeypatch):
    """The per-method bootstrap intervals run in threads beside the pairwise statistics: the report is the
    one a single thread computes, and its intervals are the reference bootstrap's."""
    from comparna.services import rankings

    table = random_table(21, 5, 140)
    labels = family_labels(21, 140, "many")
    identity = {"clusters": labels, "reference_pairs": [0] * 140, "candidate_pairs": [0] * 140}
    monkeypatch.setattr(rankings, "THREADS", 1)
    one = rankings.compute_report(table, identity, seed=3)
    monkeypatch.setattr(rankings, "THREADS", 3)
    three = rankings.compute_report(table, identity, seed=3)
    assert one == three
    for row in three["methods"]:
        i = table.methods.index(row["method"])
        own = ranking.per_target_mcc(table)[i][table.present[i]]
        means = ref.bootstrap_means(own, seed=3)
        tail = 100 * (1 - 0.95) / 2
        low, high = np.percentile(means, [tail, 100 - tail])
        assert row["mean_mcc_ci"] == [float(low), float(high)]


def test_enumerated_sign_flip_pvalue_equals_the_reference():
    from comparna.rna.clustered import _enumerated_pvalue

    rng = np.random.default_rng(9)
    for _ in range(200):
        weights = rng.integers(1, 400, int(rng.integers(1, 21)))
        observed = int(rng.integers(0, weights.sum() + 2))
        assert _enumerated_pvalue(weights, observed) == ref._enumerated_pvalue(weights, observed)


def test_both_exact_sign_flip_pvalues_are_the_same_float_for_up_to_20_families():
    """sign_flip_pvalue uses the cheaper of enumeration and convolution for C <= 20: they must agree."""
    from comparna.rna.clustered import _convolution_pvalue

    rng = np.random.default_rng(10)
    for _ in range(300):
        weights = rng.integers(1, 60, int(rng.integers(1, 21)))
        observed = int(rng.integers(0, weights.sum() + 2))
        assert _convolution_pvalue(weights, observed) == ref._enumerated_pvalue(weights, observed)


def test_t_tests_equal_the_reference_including_their_edge_cases():
    from comparna.rna.clustered import cluster_paired_t_test
    from comparna.rna.statistics import paired_t_test

    rng = np.random.default_rng(12)
    cases = [(np.zeros(6), np.zeros(6)), (np.ones(5), np.zeros(5))]
    cases += [(rng.random(n), rng.random(n)) for n in rng.integers(2, 300, 40)]
    def same(new, old):
        fields = ("statistic", "pvalue", "df", "mean_difference")
        values = [(getattr(new, f), getattr(old, f)) for f in fields]
        return all(x == y or (np.isnan(x) and np.isnan(y)) for x, y in values)

    for a, b in cases:
        assert same(paired_t_test(a, b), ref.paired_t_test(a, b))
        for k in (1, 2, 7):
            labels = [f"F{x % k}" for x in range(a.size)]
            assert same(cluster_paired_t_test(a, b, labels), ref.cluster_paired_t_test(a, b, labels))
