"""Cluster bootstraps of many samples from one set of draws (the nightly rankings' per-method intervals).

A cluster bootstrap's draws depend only on the seed and the number of clusters C
(:func:`comparna.rna.clustered._multiplicities`), not on the values. Every method of a ranking is
bootstrapped with the ranking's seed, and most methods have scored targets in every cluster of the subset,
so they draw the same (resamples × C) multiplicities — which cost far more to draw than to apply (one
matrix product per block). :func:`cluster_bootstrap_means_many` draws them once per C for all samples with
that C and applies each block to each sample exactly as :func:`comparna.rna.clustered.cluster_bootstrap_means`
does: the means are bit-for-bit the same as one call per sample (``tests/unit/test_shared_draws.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from comparna.rna.clustered import Clusters, _multiplicities

__all__ = ["cluster_bootstrap_means_many"]


def cluster_bootstrap_means_many(
    samples: Sequence[tuple[np.ndarray, Clusters]], *, resamples: int = 10_000, seed: int = 0
) -> list[np.ndarray]:
    """``[cluster_bootstrap_means(x, c, resamples=resamples, seed=seed) for x, c in samples]`` for 1-D
    samples, with the draws made once per cluster count instead of once per sample."""
    out: list[np.ndarray | None] = [None] * len(samples)
    by_count: dict[int, list[int]] = {}
    for k, (x, c) in enumerate(samples):
        if np.ndim(x) != 1 or len(x) == 0 or c.codes.size != len(x):
            raise ValueError("each sample: a non-empty 1-D array with one cluster code per value")
        by_count.setdefault(c.count, []).append(k)
    for count, members in by_count.items():
        sums, sizes = [], []
        for k in members:
            x, c = samples[k]
            x = np.asarray(x, dtype=np.float64)
            # the (C, 1) column cluster_bootstrap_means builds for one row of values
            sums.append(np.stack([np.bincount(c.codes, weights=x, minlength=c.count)], axis=1))
            sizes.append(c.sizes.astype(np.float64))
        blocks: list[list[np.ndarray]] = [[] for _ in members]
        for w in _multiplicities(np.random.default_rng(seed), count, resamples):
            for j in range(len(members)):
                blocks[j].append((w @ sums[j]) / (w @ sizes[j])[:, None])
        for j, k in enumerate(members):
            out[k] = np.concatenate(blocks[j], axis=0).T[0]
    return out  # type: ignore[return-value]
