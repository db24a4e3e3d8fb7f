"""Family-clustered CIs and paired tests against straightforward implementations with the same draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from comparna.rna.clustered import (
    cluster_bootstrap_ci_mean,
    cluster_codes,
    cluster_paired_t_test,
    equivalence_verdict,
    pooled_mcc_difference,
)
from comparna.rna.metrics import mcc
from comparna.rna.statistics import (
    bootstrap_ci_mean,
    bootstrap_means,
    compare_paired,
    paired_bootstrap,
    paired_t_test,
    resample_indices,
)


def naive_percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    h = (len(s) - 1) * q / 100
    lo = int(np.floor(h))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def families(rng: np.random.Generator, n: int = 90):
    """Targets in families of very different sizes, with a family effect (correlated scores)."""
    sizes = [30, 15, 10, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1]
    labels = [f"RF{k:05d}" for k, size in enumerate(sizes) for _ in range(size)][:n]
    effect = {lab: rng.normal(0, 0.15) for lab in sorted(set(labels))}  # not set order: PYTHONHASHSEED
    values = np.array([0.6 + effect[lab] + rng.normal(0, 0.05) for lab in labels])
    order = rng.permutation(len(labels))  # targets of a family are not contiguous
    return values[order], [labels[k] for k in order]


def naive_cluster_bootstrap(values, labels, resamples, seed, confidence=0.95):
    """Draw clusters with the target-level generator calls; average every target of the drawn clusters."""
    names = sorted(set(labels))
    members = {name: [v for v, lab in zip(values, labels, strict=True) if lab == name] for name in names}
    rows = np.vstack(list(resample_indices(np.random.default_rng(seed), len(names), resamples)))
    means = []
    for row in rows:
        pooled = [v for c in row for v in members[names[c]]]
        means.append(sum(pooled) / len(pooled))
    tail = 100 * (1 - confidence) / 2
    return means, naive_percentile(means, tail), naive_percentile(means, 100 - tail)


def test_clustered_ci_equals_a_straightforward_cluster_bootstrap_with_the_same_draws():
    values, labels = families(np.random.default_rng(1))
    ci = cluster_bootstrap_ci_mean(values, labels, resamples=3000, seed=7)
    _, low, high = naive_cluster_bootstrap(values, labels, 3000, 7)
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)
    assert ci.estimate == pytest.approx(values.mean()) and ci.n == values.size
    # the same through the statistics module's switch
    assert bootstrap_ci_mean(values, resamples=3000, seed=7, clusters=labels) == ci
    # related targets: the clustered interval is much wider than the target-level one
    plain = bootstrap_ci_mean(values, resamples=3000, seed=7)
    assert ci.width > 2 * plain.width


def test_paired_clustered_bootstrap_equals_the_straightforward_one():
    rng = np.random.default_rng(2)
    a, labels = families(rng)
    b = a - 0.01 + rng.normal(0, 0.03, a.size)
    result = paired_bootstrap(a, b, resamples=2000, seed=3, clusters=labels)
    means, low, high = naive_cluster_bootstrap(list(a - b), labels, 2000, 3)
    assert result.interval.low == pytest.approx(low, abs=1e-12)
    assert result.interval.high == pytest.approx(high, abs=1e-12)
    observed = float(np.mean(a - b))
    exceed = sum(abs(m - observed) >= abs(observed) for m in means)
    assert result.exceedances == exceed and 0 < result.pvalue <= 1


def test_singleton_clusters_reduce_to_the_target_level_procedures():
    rng = np.random.default_rng(4)
    a = rng.normal(0.5, 0.1, 40)
    b = a + rng.normal(0.02, 0.05, 40)
    singletons = [f"t{k:03d}" for k in range(40)]  # sorted order = target order
    t = paired_t_test(a, b, clusters=singletons)
    ref = stats.ttest_rel(a, b)
    assert t.statistic == pytest.approx(ref.statistic, rel=1e-12) and t.pvalue == pytest.approx(ref.pvalue)
    assert t.df == 39
    # same generator calls: each singleton-cluster resample is the target-level resample
    clustered = bootstrap_ci_mean(a, resamples=1000, seed=5, clusters=singletons)
    plain = bootstrap_ci_mean(a, resamples=1000, seed=5)
    assert clustered.low == pytest.approx(plain.low, abs=1e-12)
    assert clustered.high == pytest.approx(plain.high, abs=1e-12)
    assert bootstrap_means(a, resamples=10, seed=5).shape == (10,)


def test_cluster_robust_t_equals_a_t_test_on_cluster_means_for_equal_cluster_sizes():
    rng = np.random.default_rng(6)
    labels = [f"F{k % 12}" for k in range(72)]  # 12 families of 6
    a = rng.normal(0.6, 0.1, 72) + np.array([0.1 * (k % 12) / 12 for k in range(72)])
    b = a - 0.02 + rng.normal(0, 0.04, 72)
    t = cluster_paired_t_test(a, b, labels)
    d = a - b
    means = [d[[k for k in range(72) if labels[k] == f"F{f}"]].mean() for f in range(12)]
    ref = stats.ttest_1samp(means, 0.0)
    assert t.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert t.pvalue == pytest.approx(ref.pvalue, rel=1e-8) and t.df == 11
    assert np.isnan(cluster_paired_t_test(a, b, ["one"] * 72).statistic)


def test_pooled_mcc_difference_with_the_same_draws_and_the_equivalence_verdict():
    rng = np.random.default_rng(8)
    _, labels = families(rng)
    n = len(labels)
    # per-target counts (tp, fn, fp, fp_compatible, tn) of two similar methods
    tp = rng.integers(5, 30, n)
    fn = rng.integers(0, 10, n)
    fp = rng.integers(0, 12, n)
    eps = np.minimum(fp, rng.integers(0, 3, n))
    tn = 45_000 - tp - fn - fp
    a = np.stack([tp, fn, fp, eps, tn], axis=1)
    b = a.copy()
    b[:, 0] = np.maximum(tp - rng.integers(0, 2, n), 0)
    b[:, 1] = a[:, 0] + a[:, 1] - b[:, 0]
    diff = pooled_mcc_difference(a, b, labels, resamples=1500, seed=9)
    names = sorted(set(labels))
    rows = np.vstack(list(resample_indices(np.random.default_rng(9), len(names), 1500)))
    draws = []
    for row in rows:
        members = [k for c in row for k in range(n) if labels[k] == names[c]]
        pa, pb = a[members].sum(axis=0), b[members].sum(axis=0)
        draws.append(mcc(*map(int, pa)) - mcc(*map(int, pb)))
    assert diff.low == pytest.approx(naive_percentile(draws, 5), abs=1e-12)
    assert diff.high == pytest.approx(naive_percentile(draws, 95), abs=1e-12)
    assert diff.estimate == pytest.approx(mcc(*map(int, a.sum(axis=0))) - mcc(*map(int, b.sum(axis=0))))
    assert diff.clusters == len(names) and diff.targets == n and diff.confidence == 0.90
    assert diff.verdict == equivalence_verdict(diff.low, diff.high, 0.01)
    assert equivalence_verdict(-0.004, 0.006) == "practically equal"
    assert equivalence_verdict(0.012, 0.03) == "practically different"
    assert equivalence_verdict(-0.004, 0.02) == "undetermined"
    assert equivalence_verdict(-0.004, 0.006, delta=0.005) == "undetermined"


def test_compare_paired_clustered_reports_design_effect_and_keeps_the_target_level_default():
    rng = np.random.default_rng(10)
    a, labels = families(rng)
    b = a - 0.02 + rng.normal(0, 0.02, a.size) + np.array([0.03 if lab == "RF00000" else 0 for lab in labels])
    plain = compare_paired(a, b, resamples=1000, seed=1)
    clustered = compare_paired(a, b, resamples=1000, seed=1, clusters=labels)
    assert plain.clusters is None and plain.design_effect == 1.0
    assert clustered.clusters == len(set(labels)) and clustered.design_effect > 1
    assert clustered.t_test.df == clustered.clusters - 1
    assert clustered.n_required >= plain.n_required and clustered.power <= plain.power
    assert clustered.bootstrap.interval.width > plain.bootstrap.interval.width
    assert cluster_codes(labels).sizes.sum() == a.size


def test_pairwise_statistics_of_a_ranking_table():
    from comparna.rna.pair_statistics import pairwise_statistics
    from comparna.rna.ranking import CountsTable

    rng = np.random.default_rng(11)
    _, labels = families(rng, n=60)
    methods, n = ("Beta", "Alpha", "Gamma"), len(labels)
    counts = np.zeros((3, n, 5), dtype=np.int64)
    counts[..., 0] = rng.integers(5, 30, (3, n))
    counts[..., 1] = rng.integers(0, 10, (3, n))
    counts[..., 2] = rng.integers(0, 10, (3, n))
    counts[..., 3] = np.minimum(counts[..., 2], rng.integers(0, 3, (3, n)))
    counts[..., 4] = 40_000
    present = rng.random((3, n)) < 0.85
    table = CountsTable(methods, tuple(f"t{k}" for k in range(n)), counts, present)
    report = pairwise_statistics(table, labels, seed=5, resamples=400)
    assert set(report["pairs"]) == {"Alpha", "Beta"} and set(report["pairs"]["Alpha"]) == {"Beta", "Gamma"}
    entry = report["pairs"]["Alpha"]["Gamma"]  # Alpha (index 1) − Gamma (index 2)
    common = present[1] & present[2]
    mcc_a = [mcc(*map(int, c)) for c in counts[1, common]]
    mcc_b = [mcc(*map(int, c)) for c in counts[2, common]]
    assert entry["n"] == int(common.sum())
    assert entry["paired"]["t"] == pytest.approx(stats.ttest_rel(mcc_a, mcc_b).statistic, rel=1e-10)
    # the interval: the shared cluster draws, each drawn cluster contributing its common targets
    names = sorted(set(labels))
    rows = np.vstack(list(resample_indices(np.random.default_rng(5), len(names), 400)))
    draws = []
    for row in rows:
        members = [k for c in row for k in range(n) if labels[k] == names[c] and common[k]]
        pa, pb = counts[1, members].sum(axis=0), counts[2, members].sum(axis=0)
        draws.append(mcc(*map(int, pa)) - mcc(*map(int, pb)))
    eq = entry["equivalence"]
    assert eq["low"] == pytest.approx(naive_percentile(draws, 5), abs=1e-12)
    assert eq["high"] == pytest.approx(naive_percentile(draws, 95), abs=1e-12)
    assert eq["verdict"] == equivalence_verdict(eq["low"], eq["high"])
    assert report["clusters"] == len(names) and "practically equal" in report["method"]
