"""Each method's rank with a percentile interval from a bootstrap of families (SCIENCE.md §5), for the
target-level order (net wins) and for the robustness ranking (pooled MCC).

The interval is computed with the rule that gives the point: every resample decides the pairs with the same
test and win rule as :func:`comparna.rna.target_verdicts.target_level_ranking` and ranks by net wins. A
method tied with others can take any of the tied places, so each resample gives it a span of ranks (1 + the
number strictly ahead … the number at least as good): the interval runs from the low quantile of the span's
start to the high quantile of its end, and always holds the point's own span (it is widened to it where the
percentiles miss it: a percentile interval need not contain the point estimate). On a subset where nothing
can be decided every method's interval is therefore [1, M], never "1 [1–1]".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from comparna.rna import thresholds
from comparna.rna import verdict_statistics as vs
from comparna.rna.clustered import _multiplicities
from comparna.rna.counts_table import ALPHA, MIN_COMMON, CountsTable
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.pair_ranks import PairSignedRanks, _codes, pair_signed_ranks
from comparna.rna.ranking_result import tie_spans
from comparna.rna.statistics import holm_rows

#: Resamples handled together in one block of the interval bootstrap (bounds its temporaries).
_BLOCK = 128


def _quantiles(
    starts: np.ndarray, ends: np.ndarray, confidence: float, point: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    tail = (1 - confidence) / 2
    low = np.quantile(starts, tail, axis=0, method="inverted_cdf").astype(np.int64)
    high = np.quantile(ends, 1 - tail, axis=0, method="inverted_cdf").astype(np.int64)
    low, high = np.minimum(low, point[0]), np.maximum(high, point[1])
    assert (low <= point[0]).all() and (point[1] <= high).all()
    return low, high


def net_win_spans(
    p: np.ndarray,
    stat: np.ndarray,
    mean: np.ndarray,
    first_of: np.ndarray,
    second_of: np.ndarray,
    *,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Rank spans by net wins of many resamples at once: ``p``, ``stat``, ``mean`` (R, P) per resample and
    pair; Holm across the pairs of each row; a pair is won by the method its statistic favours when the
    adjusted p < α and the mean agrees (the target-level win rule). Returns (starts, ends), each (R, M)."""
    adjusted = holm_rows(p)
    win = (adjusted < alpha) & (stat != 0) & (np.sign(mean) == np.sign(stat))
    first_wins = (win & (stat > 0)).astype(np.float64)
    second_wins = (win & (stat < 0)).astype(np.float64)
    net = (first_wins - second_wins) @ first_of + (second_wins - first_wins) @ second_of
    better = (net[:, None, :] > net[:, :, None]).sum(axis=2)
    at_least = (net[:, None, :] >= net[:, :, None]).sum(axis=2)
    return 1 + better, at_least


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
    point: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each method's rank interval by net wins from a bootstrap of families (module docstring).

    Every resample draws C families with replacement (one matrix of draws from ``seed`` serves every pair:
    a pair uses the families of its common targets, a family drawn twice counts twice); per pair the
    family-summed signed ranks S_c give T* = Σ w_c S_c and its p under the sign-flip null of the drawn
    families (:func:`comparna.rna.verdict_statistics.resampled_pvalues`: exact near the Holm band), Holm
    across the pairs, the win rule of the point verdicts (the statistic's side, unless the resample's mean
    difference disagrees), net wins and their rank spans. The interval is the (1 − confidence)/2 quantile
    of the span starts and the (1 + confidence)/2 quantile of the span ends (inverted CDF: actual ranks),
    widened to hold the point's span.

    Parameters
    ----------
    pair_data : PairSignedRanks, optional
        :func:`comparna.rna.pair_ranks.pair_signed_ranks` with ``sums=True`` of the same table, clusters
        and ``min_common`` (computed when not given).
    point : numpy.ndarray, optional
        Net wins of the point verdicts (computed from ``pair_data`` when not given).

    Returns
    -------
    (low, high) : numpy.ndarray
        int arrays per method.
    """
    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    if m == 0 or t == 0:
        return np.ones(m, dtype=np.int64), np.full(m, max(m, 1), dtype=np.int64)
    n_codes = int(codes.max()) + 1
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if pair_data is None or pair_data.signed is None:
        pair_data = pair_signed_ranks(table, codes, pairs, sums=True, alpha=alpha, effects=False)
    elif pair_data.pairs != pairs:
        raise ValueError("pair_data was computed for other pairs")
    if point is None:
        from comparna.rna.target_verdicts import target_level_ranking

        point = target_level_ranking(table, clusters=clusters, alpha=alpha, pair_data=pair_data).net
    own = tie_spans(point)
    if not pairs or resamples <= 0:
        return own
    signed, diffs, sizes = pair_data.signed, pair_data.diffs, pair_data.sizes
    band = vs.holm_band(alpha, len(pairs))
    pa, pb = np.array(pairs).T
    first_of = np.zeros((len(pairs), m))
    first_of[np.arange(len(pairs)), pa] = 1.0
    second_of = np.zeros((len(pairs), m))
    second_of[np.arange(len(pairs)), pb] = 1.0
    rng = np.random.default_rng(seed)
    starts, ends = [], []
    for weights in _multiplicities(rng, n_codes, resamples):
        for lo in range(0, weights.shape[0], _BLOCK):
            w = weights[lo : lo + _BLOCK]
            stat = w @ signed
            drawn = w @ sizes
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = np.where(drawn > 0, (w @ diffs) / drawn, 0.0)
            p = vs.resampled_pvalues(signed, w, band=band)
            s, e = net_win_spans(p, stat, mean, first_of, second_of, alpha=alpha)
            starts.append(s)
            ends.append(e)
    return _quantiles(np.concatenate(starts), np.concatenate(ends), confidence, own)


def robustness_intervals(
    filled: np.ndarray,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = thresholds.RANK_RESAMPLES,
    confidence: float = thresholds.RANK_CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Rank intervals of the robustness ranking (pooled MCC, missing predictions as empty structures) from
    the same bootstrap of families: each resample pools the drawn families' counts (a family drawn twice
    counts twice) and ranks by MCC; the interval holds the point's span.

    Parameters
    ----------
    filled : numpy.ndarray
        (methods, targets, 5) counts with the missing predictions already filled in
        (:func:`comparna.rna.ranking_result.robustness_counts`).
    """
    m, t = filled.shape[:2]
    codes = _codes(clusters, t)
    if m == 0 or t == 0:
        return np.ones(m, dtype=np.int64), np.full(m, max(m, 1), dtype=np.int64)
    n_codes = int(codes.max()) + 1
    fields = filled.shape[2]
    per_family = np.zeros((n_codes, m * fields))
    np.add.at(per_family, codes, filled.transpose(1, 0, 2).reshape(t, -1).astype(np.float64))
    point = mcc_from_arrays(*np.moveaxis(filled.sum(axis=1).astype(np.float64), -1, 0))
    own = tie_spans(point)
    if resamples <= 0:
        return own
    rng = np.random.default_rng(seed)
    starts, ends = [], []
    for weights in _multiplicities(rng, n_codes, resamples):
        pooled = (weights @ per_family).reshape(-1, m, fields)
        mcc = mcc_from_arrays(*np.moveaxis(pooled, -1, 0))
        starts.append(1 + (mcc[:, None, :] > mcc[:, :, None]).sum(axis=2))
        ends.append((mcc[:, None, :] >= mcc[:, :, None]).sum(axis=2))
    return _quantiles(np.concatenate(starts), np.concatenate(ends), confidence, own)
