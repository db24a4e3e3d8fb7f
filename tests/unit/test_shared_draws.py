"""The shared-draw cluster bootstrap equals one cluster bootstrap per sample, bit for bit."""

import numpy as np
import pytest

from comparna.rna.clustered import cluster_bootstrap_means, cluster_codes, select_clusters
from comparna.rna.shared_draws import cluster_bootstrap_means_many


def test_many_samples_equal_one_call_each_bit_for_bit():
    rng = np.random.default_rng(3)
    n = 600
    labels = [f"F{i}" for i in rng.integers(0, 90, n)]
    whole = cluster_codes(labels)
    samples = []
    for m in range(7):  # different coverages: some miss whole clusters (another count), most do not
        mask = rng.random(n) < (0.3 if m == 6 else 0.95)
        samples.append((rng.random(int(mask.sum())), select_clusters(whole, mask)))
    assert len({c.count for _, c in samples}) >= 2  # both paths: a shared count and a count of its own
    got = cluster_bootstrap_means_many(samples, resamples=2500, seed=11)
    for (x, c), means in zip(samples, got, strict=True):
        expected = cluster_bootstrap_means(x, c, resamples=2500, seed=11)
        assert means.shape == expected.shape == (2500,)
        assert np.array_equal(means, expected)


def test_few_clusters_path_and_errors():
    x = np.arange(12, dtype=float)
    c = cluster_codes(list("aabbccddeeff"))
    (got,) = cluster_bootstrap_means_many([(x, c)], resamples=300, seed=2)
    assert np.array_equal(got, cluster_bootstrap_means(x, c, resamples=300, seed=2))
    with pytest.raises(ValueError):
        cluster_bootstrap_means_many([(np.zeros(0), c)])


def test_rankings_clustered_intervals_equal_one_bootstrap_per_method():
    """What the nightly ranking stores per method is the cluster bootstrap CI of that method alone."""
    from comparna.rna.ranking import CountsTable
    from comparna.rna.statistics import bootstrap_ci_mean
    from comparna.services.rankings import _own_mccs, clustered_intervals

    rng = np.random.default_rng(8)
    m, t = 5, 400
    counts = rng.integers(0, 30, size=(m, t, 5)).astype(np.int64)
    counts[..., 3] = 0
    present = rng.random((m, t)) < np.array([0.99, 0.9, 0.9, 0.5, 0.0])[:, None]
    table = CountsTable(tuple(f"m{i}" for i in range(m)), tuple(f"t{k}" for k in range(t)), counts, present)
    whole = cluster_codes([f"F{k}" for k in rng.integers(0, 120, t)])
    got = clustered_intervals(table, seed=5, clusters=whole)
    assert sorted(got) == [0, 1, 2, 3]  # the method with no scored target has no interval
    for i, fields in got.items():
        own = select_clusters(whole, present[i])
        ci = bootstrap_ci_mean(_own_mccs(table, i), seed=5, clusters=own)
        assert fields == {"mean_mcc_ci_clustered": [ci.low, ci.high], "clusters": own.count}
