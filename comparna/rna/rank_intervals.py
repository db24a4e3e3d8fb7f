"""Each method's rank with a percentile interval from a bootstrap of families (SCIENCE.md §5)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import ndtr

from comparna.rna import thresholds
from comparna.rna.counts_table import ALPHA, MIN_COMMON, CountsTable
from comparna.rna.pair_ranks import PairSignedRanks, _codes, pair_signed_ranks


def rank_intervals(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = thresholds.RANK_RESAMPLES,
    confidence: float = thresholds.RANK_CONFIDENCE,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    pair_data: PairSignedRanks | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each method's rank with a percentile interval from a bootstrap of families (SCIENCE.md §5).

    Every resample draws C families with replacement (one matrix of draws from ``seed`` serves every pair:
    a pair uses the families of its common targets, a family drawn twice counts twice) and recomputes the
    order: per pair the family-summed signed ranks S_c (ranks of the full pairwise set) give T* = Σ w_c S_c
    and the large-sample clustered signed-rank test (Rosner, Glynn & Lee 2006: Var = Σ w_c S_c²), never
    below 2/2^C for C distinct families drawn (the exact test's floor, so that few families cannot make
    wins the primary verdict could not), the p-values are Holm-adjusted across the pairs, wins follow as in
    :func:`target_level_ranking` and the methods get competition ranks. The interval is the
    (1 − confidence)/2 and (1 + confidence)/2 quantiles of each method's rank (inverted CDF: actual ranks).

    ``pair_data`` (:func:`pair_signed_ranks` with ``sums=True`` of the same table, clusters and
    ``min_common``) is computed when not given.

    Returns
    -------
    (low, high) : numpy.ndarray
        int arrays per method.
    """
    from comparna.rna.clustered import _multiplicities

    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    if m == 0 or t == 0:
        return np.ones(m, dtype=np.int64), np.ones(m, dtype=np.int64)
    n_codes = int(codes.max()) + 1
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if not pairs:
        ranks = np.ones(m, dtype=np.int64)
        return ranks, ranks
    if pair_data is None or pair_data.signed is None:
        pair_data = pair_signed_ranks(table, codes, pairs, sums=True)
    elif pair_data.pairs != pairs:
        raise ValueError("pair_data was computed for other pairs")
    signed, diffs, sizes = pair_data.signed, pair_data.diffs, pair_data.sizes
    squared = signed * signed
    # 0/1 matrices: their products count families (integers below 2^24, exact in float32)
    ranked = (signed != 0).astype(np.float32)
    rng = np.random.default_rng(seed)
    ranks = []
    pa, pb = np.array(pairs).T
    # wins of a resample as a product with the pairs' incidence (exact integer counts)
    first_of = np.zeros((len(pairs), m))
    first_of[np.arange(len(pairs)), pa] = 1.0
    second_of = np.zeros((len(pairs), m))
    second_of[np.arange(len(pairs)), pb] = 1.0
    for weights in _multiplicities(rng, n_codes, resamples):
        stat_all = weights @ signed
        var_all = weights @ squared
        drawn_all = weights @ sizes
        summed_all = weights @ diffs
        # never below what the exact test allows: with C distinct families in the resample, 2 / 2^C
        distinct_all = ((weights > 0).astype(np.float32) @ ranked).astype(np.float64)
        # the rest is row by row: in blocks of resamples, so that its temporaries stay small
        for lo in range(0, weights.shape[0], 128):
            stat, var, drawn = stat_all[lo : lo + 128], var_all[lo : lo + 128], drawn_all[lo : lo + 128]
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(var > 0, stat / np.sqrt(var), 0.0)
                mean = np.where(drawn > 0, summed_all[lo : lo + 128] / drawn, 0.0)
            p = 2 * ndtr(-np.abs(z))
            p = np.maximum(p, np.exp2(1.0 - distinct_all[lo : lo + 128]))
            order = np.argsort(p, axis=1, kind="stable")
            q = np.take_along_axis(p, order, axis=1) * (len(pairs) - np.arange(len(pairs)))
            q = np.minimum(1.0, np.maximum.accumulate(q, axis=1))
            adjusted = np.empty_like(q)
            np.put_along_axis(adjusted, order, q, axis=1)
            win = (adjusted < alpha) & (np.sign(mean) == np.sign(stat)) & (mean != 0)
            wins = (win & (mean > 0)).astype(float) @ first_of + (win & (mean < 0)).astype(float) @ second_of
            ranks.append(1 + (wins[:, None, :] > wins[:, :, None]).sum(axis=2))
    all_ranks = np.concatenate(ranks, axis=0)
    tail = (1 - confidence) / 2
    low = np.quantile(all_ranks, tail, axis=0, method="inverted_cdf").astype(np.int64)
    high = np.quantile(all_ranks, 1 - tail, axis=0, method="inverted_cdf").astype(np.int64)
    return low, high
