"""The ranking statistics as they were implemented before issue 28 (one pair at a time), kept as the
reference the vectorised implementations must equal exactly (tests/unit/test_ranking_fast_path.py).

Copied from comparna/rna/{statistics,clustered,ranking,pair_statistics}.py at the commit before the fast
paths; only their imports are gathered here. Not collected by pytest (no ``test_`` prefix).
"""

# ruff: noqa: E501

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as sps
from scipy.stats import rankdata

from comparna.rna import thresholds
from comparna.rna.clustered import (
    EQUIVALENCE_CONFIDENCE,
    EQUIVALENCE_DELTA,
    Clusters,
    _clusters,
    _signed_rank_sums,
    cluster_codes,
    cluster_standard_error,
    clustered_signed_rank_test,
    equivalence_verdict,
)
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.pair_statistics import PAIR_RESAMPLES, _finite
from comparna.rna.ranking import (
    ALPHA,
    COUNT_FIELDS,
    DRAW,
    LOSS,
    MIN_COMMON,
    UNKNOWN,
    WIN,
    CountsTable,
    PairwiseRanking,
    _codes,
    _pairwise_result,
    per_target_mcc,
)
from comparna.rna.signflip import clustered_mean_interval, resampled_pvalues, sign_flip_pvalue
from comparna.rna.statistics import RESAMPLES, TTest, holm_adjust


def resample_indices(rng: np.random.Generator, n: int, resamples: int, *, chunk: int = 1000):
    """Yield blocks of bootstrap index rows (with replacement), ``chunk`` rows at a time, ``resamples`` rows.

    Blocks bound the memory (10 000 × 2000 int64 indices would take 160 MB at once).
    """
    done = 0
    while done < resamples:
        rows = min(chunk, resamples - done)
        yield rng.integers(0, n, size=(rows, n))
        done += rows


def bootstrap_means(
    values: Sequence[float] | np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0
) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of ``values`` (vectorised, seeded).

    Parameters
    ----------
    values : array_like
        1-D per-structure scores, or 2-D (k, n): k score vectors resampled with the same indices (paired).

    Returns
    -------
    numpy.ndarray
        Shape (resamples,) for 1-D input, (k, resamples) for 2-D.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.shape[-1] == 0:
        raise ValueError("cannot bootstrap an empty sample")
    rng = np.random.default_rng(seed)
    blocks = [x[..., idx].mean(axis=-1) for idx in resample_indices(rng, x.shape[-1], resamples)]
    return np.concatenate(blocks, axis=-1)


def _multiplicities(rng: np.random.Generator, count: int, resamples: int):
    """Yield blocks of (rows, C) draw counts: row r says how often each cluster was drawn in resample r.

    The draws are ``rng.integers(0, C, size=(rows, C))`` blocks exactly as
    :func:`comparna.rna.statistics.resample_indices` makes them (the same stream for the same seed), turned
    into counts so that a resample's statistic is one matrix product with the per-cluster sums.
    """
    for idx in resample_indices(rng, count, resamples):
        rows = idx.shape[0]
        flat = (idx + (np.arange(rows) * count)[:, None]).ravel()
        yield np.bincount(flat, minlength=rows * count).reshape(rows, count).astype(np.float64)


def cluster_bootstrap_means(
    values: Sequence[float] | np.ndarray,
    clusters: Clusters | Sequence[str],
    *,
    resamples: int = 10_000,
    seed: int = 0,
) -> np.ndarray:
    """Means over the targets of resampled clusters (cluster bootstrap of the mean).

    Parameters
    ----------
    values : array_like
        1-D per-target values, or 2-D (k, n) resampled with the same clusters (paired).
    clusters : Clusters or sequence of labels
        One label per target.

    Returns
    -------
    numpy.ndarray
        (resamples,) or (k, resamples).
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    c = _clusters(clusters, n)
    rows = x.reshape(-1, n)
    sums = np.stack([np.bincount(c.codes, weights=row, minlength=c.count) for row in rows], axis=1)
    sizes = c.sizes.astype(np.float64)
    rng = np.random.default_rng(seed)
    blocks = [(w @ sums) / (w @ sizes)[:, None] for w in _multiplicities(rng, c.count, resamples)]
    means = np.concatenate(blocks, axis=0).T  # (k, resamples)
    return means[0] if x.ndim == 1 else means


def _cluster_se(d: np.ndarray, codes: np.ndarray) -> float:
    """CR1 family-robust standard error of mean(d) (Liang & Zeger 1986); NaN with one family."""
    _, local = np.unique(codes, return_inverse=True)
    k = int(local.max()) + 1 if local.size else 0
    if k < 2:
        return float("nan")
    residual = np.bincount(local, weights=d - d.mean(), minlength=k)
    return float(np.sqrt(k / (k - 1) * np.sum(residual**2)) / d.size)


def target_level_ranking(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    delta: float = thresholds.EQUIVALENCE_DELTA,
) -> PairwiseRanking:
    """The target-level verdicts of issue 35, one pair at a time (the reference of the vectorised engine):
    few / floor / Holm win on the statistic's side unless the mean disagrees / "=" by the 90 % clustered
    interval inside ±δ / else "?"; ranks by net wins. (Rewritten for issue 35: the power rule is gone.)"""
    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    scores = per_target_mcc(table)
    p_values = np.full((m, m), np.nan)
    mean_difference = np.full((m, m), np.nan)
    statistic = np.zeros((m, m))
    low = np.full((m, m), np.nan)
    high = np.full((m, m), np.nan)
    n_clusters = np.zeros((m, m), dtype=np.int64)
    nonzero = np.zeros((m, m), dtype=bool)
    verdicts = np.full((m, m), UNKNOWN, dtype="<U1")
    reasons = np.full((m, m), "few", dtype="<U9")
    np.fill_diagonal(verdicts, "")
    np.fill_diagonal(reasons, "")
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    band = (alpha / max(1, len(pairs)), alpha)
    for a, b in pairs:
        w = present[a] & present[b]
        d = scores[a, w] - scores[b, w]
        test = clustered_signed_rank_test(scores[a, w], scores[b, w], codes[w])
        sums = _signed_rank_sums(d, codes[w])[0]
        p_values[a, b] = p_values[b, a] = sign_flip_pvalue(sums, band=band)[0] if sums.size else np.nan
        mean_difference[a, b], mean_difference[b, a] = d.mean(), -d.mean()
        nonzero[a, b] = nonzero[b, a] = bool(np.any(d))
        statistic[a, b], statistic[b, a] = test.statistic, -test.statistic
        lo, hi = clustered_mean_interval(d, codes[w], confidence=0.90)
        low[a, b], high[a, b], low[b, a], high[b, a] = lo, hi, -hi, -lo
        n_clusters[a, b] = n_clusters[b, a] = np.unique(codes[w]).size
    p_adjusted = np.full((m, m), np.nan)
    floor_fires = bool(pairs) and len(pairs) * 2.0 / 2.0 ** np.unique(codes).size >= alpha
    if pairs:
        pa, pb = np.array(pairs).T
        adjusted = holm_adjust(p_values[pa, pb])
        p_adjusted[pa, pb] = p_adjusted[pb, pa] = adjusted
        for (a, b), q in zip(pairs, adjusted, strict=True):
            diff, stat = mean_difference[a, b], statistic[a, b]
            if floor_fires:
                reasons[a, b] = reasons[b, a] = "floor"
            elif np.isfinite(q) and q < alpha and stat != 0:
                if np.sign(diff) == np.sign(stat):
                    verdicts[a, b], verdicts[b, a] = (WIN, LOSS) if stat > 0 else (LOSS, WIN)
                    reasons[a, b] = reasons[b, a] = ""
                else:
                    reasons[a, b] = reasons[b, a] = "direction"
            elif not nonzero[a, b] or (-delta < low[a, b] and high[a, b] < delta):
                verdicts[a, b] = verdicts[b, a] = DRAW
                reasons[a, b] = reasons[b, a] = ""
            else:
                reasons[a, b] = reasons[b, a] = "open"
    return _pairwise_result(
        table,
        verdicts,
        common=common,
        p_values=p_values,
        mean_difference=mean_difference,
        seed=seed,
        net=True,
        p_adjusted=p_adjusted,
        reasons=reasons,
        clusters=n_clusters,
        interval_low=low,
        interval_high=high,
    )


def rank_intervals(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = thresholds.RANK_RESAMPLES,
    confidence: float = thresholds.RANK_CONFIDENCE,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
) -> tuple[np.ndarray, np.ndarray]:
    """Rank intervals by net wins (issue 35), with the family sums built pair by pair and each resample's
    wins counted in a loop: the reference of :func:`comparna.rna.rank_intervals.rank_intervals`."""
    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    point = target_level_ranking(table, clusters=clusters, alpha=alpha, min_common=min_common).net
    own_low = 1 + (point[None, :] > point[:, None]).sum(axis=1)
    own_high = (point[None, :] >= point[:, None]).sum(axis=1)
    n_codes = int(codes.max()) + 1
    present = table.present
    scores = per_target_mcc(table)
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if not pairs:
        return own_low, own_high
    signed = np.zeros((n_codes, len(pairs)))
    diffs = np.zeros((n_codes, len(pairs)))
    sizes = np.zeros((n_codes, len(pairs)))
    for k, (a, b) in enumerate(pairs):
        w = np.flatnonzero(present[a] & present[b])
        d = scores[a, w] - scores[b, w]
        nz = np.abs(d) > 1e-12
        if nz.any():
            r = rankdata(np.round(np.abs(d[nz]), 12))
            signed[:, k] = np.bincount(codes[w][nz], weights=np.sign(d[nz]) * r, minlength=n_codes)
        diffs[:, k] = np.bincount(codes[w], weights=d, minlength=n_codes)
        sizes[:, k] = np.bincount(codes[w], minlength=n_codes)
    rng = np.random.default_rng(seed)
    starts, ends = [], []
    band = (alpha / len(pairs), alpha)
    for weights in _multiplicities(rng, n_codes, resamples):
        p = resampled_pvalues(signed, weights.astype(np.int64), band=band)
        for r in range(weights.shape[0]):
            stat = weights[r] @ signed
            drawn = weights[r] @ sizes
            mean = np.where(drawn > 0, (weights[r] @ diffs) / np.maximum(drawn, 1), 0.0)
            adjusted = holm_adjust(p[r])
            net = np.zeros(m)
            for k, (a, b) in enumerate(pairs):
                if adjusted[k] < alpha and stat[k] != 0 and np.sign(mean[k]) == np.sign(stat[k]):
                    winner, loser = (a, b) if stat[k] > 0 else (b, a)
                    net[winner] += 1
                    net[loser] -= 1
            starts.append(1 + (net[None, :] > net[:, None]).sum(axis=1))
            ends.append((net[None, :] >= net[:, None]).sum(axis=1))
    tail = (1 - confidence) / 2
    low = np.quantile(np.array(starts), tail, axis=0, method="inverted_cdf").astype(np.int64)
    high = np.quantile(np.array(ends), 1 - tail, axis=0, method="inverted_cdf").astype(np.int64)
    return np.minimum(low, own_low), np.maximum(high, own_high)


def pairwise_statistics(
    table: CountsTable,
    clusters: Sequence[str],
    *,
    seed: int,
    resamples: int = PAIR_RESAMPLES,
    delta: float = EQUIVALENCE_DELTA,
    confidence: float = EQUIVALENCE_CONFIDENCE,
) -> dict:
    """Paired t statistics and clustered pooled-MCC equivalence for every pair of methods.

    Parameters
    ----------
    table : CountsTable
        Counts in :data:`comparna.rna.ranking.COUNT_FIELDS` order.
    clusters : sequence of str
        Cluster label of every target of the table (Rfam family, else sequence cluster).

    Returns
    -------
    dict
        ``{"pairs": {A: {B: {...}}}`` for A < B, ``"clusters"``, ``"resamples"``, ``"delta"``,
        ``"confidence"``, ``"seed"``.
    """
    if len(clusters) != len(table.targets):
        raise ValueError("one cluster label per target")
    codes = cluster_codes(list(clusters)) if len(clusters) else None
    names = list(table.methods)
    order = sorted(range(len(names)), key=lambda i: names[i])
    counts = table.counts.astype(np.float64)
    per_target_mcc = mcc_from_arrays(*np.moveaxis(counts, -1, 0))  # (methods, targets)
    draws = None
    if codes is not None and resamples > 0:
        draws = np.concatenate(list(_multiplicities(np.random.default_rng(seed), codes.count, resamples)))
    out: dict[str, dict[str, dict]] = {}
    for x, i in enumerate(order):
        for j in order[x + 1 :]:
            common = table.present[i] & table.present[j]
            n = int(common.sum())
            entry: dict = {"n": n}
            if n >= 3:
                a, b = per_target_mcc[i, common], per_target_mcc[j, common]
                labels = [clusters[k] for k in np.flatnonzero(common)]
                t = paired_t_test(a, b)
                ct = cluster_paired_t_test(a, b, labels)
                entry["paired"] = {
                    "t": _finite(t.statistic),
                    "df": t.df,
                    "pvalue": _finite(t.pvalue),
                    "mean_difference": t.mean_difference,
                    "t_clustered": _finite(ct.statistic),
                    "df_clustered": ct.df,
                    "pvalue_clustered": _finite(ct.pvalue),
                    "clusters": ct.df + 1,
                }
            if n >= 1 and draws is not None:
                pooled_a = counts[i, common].sum(axis=0)
                pooled_b = counts[j, common].sum(axis=0)
                estimate = float(mcc_from_arrays(*pooled_a) - mcc_from_arrays(*pooled_b))
                c = codes.codes[common]
                sums_a = np.stack(
                    [np.bincount(c, counts[i, common, f], codes.count) for f in range(len(COUNT_FIELDS))],
                    axis=1,
                )
                sums_b = np.stack(
                    [np.bincount(c, counts[j, common, f], codes.count) for f in range(len(COUNT_FIELDS))],
                    axis=1,
                )
                diff = mcc_from_arrays(*(draws @ sums_a).T) - mcc_from_arrays(*(draws @ sums_b).T)
                tail = 100 * (1 - confidence) / 2
                low, high = (float(v) for v in np.percentile(diff, [tail, 100 - tail]))
                entry["equivalence"] = {
                    "estimate": estimate,
                    "low": low,
                    "high": high,
                    "verdict": equivalence_verdict(low, high, delta),
                    "clusters": int(np.unique(c).size),
                }
            out.setdefault(names[i], {})[names[j]] = entry
    return {
        "pairs": out,
        "clusters": codes.count if codes is not None else 0,
        "resamples": resamples,
        "delta": delta,
        "confidence": confidence,
        "seed": seed,
        "method": (
            f"pooled MCC difference with a cluster bootstrap {round(confidence * 100)} % percentile interval "
            f"({resamples} resamples of Rfam families / sequence clusters); 'practically equal' when the "
            f"interval lies inside ±{delta:g} (two one-sided tests at {(1 - confidence) / 2:g}); the "
            "CompaRNA verdict stays primary"
        ),
    }


def _enumerated_pvalue(weights: np.ndarray, observed: int) -> float:
    """P(|Σ ±w_c| ≥ observed) over all 2^C sign vectors, enumerated in blocks (exact integer arithmetic)."""
    c = weights.size
    low = min(c, 16)
    bits = ((np.arange(2**low)[:, None] >> np.arange(low)) & 1).astype(np.int64) * 2 - 1  # (2^low, low)
    low_sums = bits @ weights[:low]
    high = c - low
    hits = 0
    for prefix in range(2**high):
        signs = np.array([1 if (prefix >> k) & 1 else -1 for k in range(high)], dtype=np.int64)
        offset = int(signs @ weights[low:]) if high else 0
        hits += int((np.abs(low_sums + offset) >= observed).sum())
    return min(1.0, hits / 2**c)


def paired_t_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, clusters: Sequence[str] | None = None
) -> TTest:
    """Two-sided paired t-test of a − b (Student 1908; Xu et al. 2012); agrees with scipy.stats.ttest_rel.

    All differences zero gives t = NaN and p = NaN (as scipy); equal non-zero differences give t = ±inf and
    p = 0. With ``clusters``, the cluster-robust test (:func:`comparna.rna.clustered.cluster_paired_t_test`).
    """
    if clusters is not None:
        return cluster_paired_t_test(a, b, clusters)
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = d.size
    if n < 2:
        raise ValueError("a paired t-test needs at least two pairs")
    mean = d.mean()
    se = d.std(ddof=1) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
    p = 2 * sps.t.sf(abs(t), n - 1) if not np.isnan(t) else np.nan
    return TTest(float(t), float(p), n - 1, float(mean))


def cluster_paired_t_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, clusters: Clusters | Sequence[str]
):
    """Cluster-robust two-sided paired t-test of a − b (CR1 variance, C − 1 degrees of freedom).

    Returns
    -------
    comparna.rna.statistics.TTest
        ``df`` = C − 1. NaN statistic and p-value with fewer than two clusters or zero variance and zero mean.
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    c = _clusters(clusters, d.size)
    k = c.count
    mean = d.mean()
    if k < 2:
        return TTest(float("nan"), float("nan"), k - 1, float(mean))
    se = cluster_standard_error(d, c)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
    p = 2 * sps.t.sf(abs(t), k - 1) if not np.isnan(t) else np.nan
    return TTest(float(t), float(p), k - 1, float(mean))
