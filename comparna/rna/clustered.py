"""Family-clustered uncertainty: confidence intervals and paired tests that treat related RNAs as one unit.

Benchmark sets hold many members of a few families (tRNAs, RNase P, SRP, rRNA fragments), so per-target
scores are not independent and target-level bootstraps understate the uncertainty. Here targets are grouped
into clusters (the Rfam family where one is assigned, else the target's sequence cluster) and

- the **cluster bootstrap** (Davison & Hinkley 1997, §3.8; Field & Welsh 2007) resamples whole clusters
  with replacement — C clusters drawn per resample, the same generator calls as the target-level bootstrap
  (:func:`comparna.rna.statistics.resample_indices` over clusters instead of targets) — and recomputes the
  statistic over every target of the drawn clusters (a cluster drawn twice counts twice): the mean of
  per-target values (a ratio of cluster sums to cluster sizes) or the MCC of pooled counts;
- the **cluster-robust paired t-test** (Liang & Zeger 1986, CR1) keeps the target-level estimate, the mean
  difference d̄ over N targets, with the variance ``C/(C−1) · Σ_c (D_c − n_c·d̄)² / N²`` (D_c, n_c: the
  cluster's sum of differences and size) and C − 1 degrees of freedom; with one target per cluster it *is*
  the ordinary paired t-test;
- an **equivalence margin** δ (default 0.01 MCC): two methods are "practically equal" when the clustered
  90 % percentile interval of their difference lies inside (−δ, δ) — two one-sided tests at α = 0.05
  (Schuirmann 1987) — "practically different" when it lies outside, otherwise "undetermined". This is shown
  beside CompaRNA's ranking verdict, which stays the primary one.

With ``clusters`` giving every target its own label, every function here equals its target-level
counterpart up to floating-point summation order.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.signed_ranks import (  # noqa: F401 - the two exact counts, re-exported for their tests
    ZERO_TOLERANCE,
    _convolution_pvalue,
    _enumerated_pvalue,
    _signed_rank_sums,
)
from comparna.rna.signflip import EXACT_BUDGET, HARD_BUDGET, sign_flip_pvalue, sign_flip_test

__all__ = [
    "EQUIVALENCE_DELTA",
    "EQUIVALENCE_CONFIDENCE",
    "Clusters",
    "cluster_codes",
    "select_clusters",
    "cluster_bootstrap_means",
    "cluster_bootstrap_ci_mean",
    "cluster_paired_bootstrap",
    "cluster_paired_t_test",
    "cluster_standard_error",
    "PooledDifference",
    "pooled_mcc_difference",
    "equivalence_verdict",
    "SignedRankTest",
    "clustered_signed_rank_test",
    "sign_flip_pvalue",
    "sign_flip_test",
    "ZERO_TOLERANCE",
]

#: Default equivalence margin on MCC.
EQUIVALENCE_DELTA = 0.01
#: Confidence of the interval the equivalence verdict reads (two one-sided tests at 5 %).
EQUIVALENCE_CONFIDENCE = 0.90
PRACTICALLY_EQUAL = "practically equal"
PRACTICALLY_DIFFERENT = "practically different"
UNDETERMINED = "undetermined"


@dataclass(frozen=True)
class Clusters:
    """Targets grouped into clusters.

    Attributes
    ----------
    codes : numpy.ndarray
        int64 cluster index of each target, 0 .. C−1, clusters numbered in the sorted order of their labels.
    labels : tuple of str
        The label of each cluster.
    sizes : numpy.ndarray
        Targets per cluster.
    """

    codes: np.ndarray
    labels: tuple[str, ...]
    sizes: np.ndarray

    @property
    def count(self) -> int:
        return len(self.labels)


def cluster_codes(labels: Sequence[str] | np.ndarray) -> Clusters:
    """Number the clusters of per-target labels (in sorted label order: independent of the target order)."""
    names, codes = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    if names.size == 0:
        raise ValueError("no targets")
    sizes = np.bincount(codes, minlength=names.size)
    return Clusters(codes.astype(np.int64), tuple(str(x) for x in names), sizes)


def select_clusters(clusters: Clusters, mask: np.ndarray) -> Clusters:
    """The clusters of the targets ``mask`` selects, numbered as :func:`cluster_codes` numbers their labels
    (the same as ``cluster_codes`` of the selected labels, without sorting strings again)."""
    g = clusters.codes[mask]
    sizes = np.bincount(g, minlength=clusters.count)
    here = np.flatnonzero(sizes)
    local = np.cumsum(sizes > 0) - 1
    if here.size > 1:
        labels = operator.itemgetter(*here)(clusters.labels)
    else:
        labels = tuple(clusters.labels[k] for k in here)
    return Clusters(local[g], labels, sizes[here])


def _clusters(clusters: Clusters | Sequence[str] | np.ndarray, n: int) -> Clusters:
    c = clusters if isinstance(clusters, Clusters) else cluster_codes(clusters)
    if c.codes.size != n:
        raise ValueError(f"{c.codes.size} cluster labels for {n} targets")
    return c


def _multiplicities(rng: np.random.Generator, count: int, resamples: int):
    """Yield blocks of (rows, C) draw counts: row r says how often each cluster was drawn in resample r.

    The draws are ``rng.integers(0, C, size=(rows, C))`` blocks exactly as
    :func:`comparna.rna.statistics.resample_indices` makes them (the same stream for the same seed), turned
    into counts so that a resample's statistic is one matrix product with the per-cluster sums.
    """
    from comparna.rna.statistics import resample_indices

    for idx in resample_indices(rng, count, resamples):
        rows = idx.shape[0]
        if count < 64:  # one bincount over (row, cluster) bins
            flat = (idx + (np.arange(rows) * count)[:, None]).ravel()
            yield np.bincount(flat, minlength=rows * count).reshape(rows, count).astype(np.float64)
            continue
        out = np.empty((rows, count))
        for r in range(rows):  # a row at a time: cache-resident, no (rows × C) int64 temporaries
            out[r] = np.bincount(idx[r], minlength=count)
        yield out


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


def _percentiles(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def cluster_bootstrap_ci_mean(
    values: Sequence[float] | np.ndarray,
    clusters: Clusters | Sequence[str],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
):
    """Cluster bootstrap percentile CI of the mean per-target value; ``n`` of the result counts targets.

    Returns
    -------
    comparna.rna.statistics.ConfidenceInterval
    """
    from comparna.rna.statistics import ConfidenceInterval

    x = np.asarray(values, dtype=np.float64)
    low, high = _percentiles(cluster_bootstrap_means(x, clusters, resamples=resamples, seed=seed), confidence)
    return ConfidenceInterval(float(x.mean()), low, high, x.size, resamples, confidence)


def cluster_paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    clusters: Clusters | Sequence[str],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
):
    """Paired cluster bootstrap of the mean difference a − b, with the centred two-sided p-value of
    :func:`comparna.rna.statistics.paired_bootstrap` (never 0: "< 1/R")."""
    from comparna.rna.statistics import ConfidenceInterval, PairedBootstrap

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    means = cluster_bootstrap_means(d, clusters, resamples=resamples, seed=seed)
    low, high = _percentiles(means, confidence)
    observed = d.mean()
    exceed = int((np.abs(means - observed) >= abs(observed)).sum())
    interval = ConfidenceInterval(float(observed), low, high, d.size, resamples, confidence)
    if exceed == 0:
        return PairedBootstrap(interval, 0, 1.0 / resamples, True)
    return PairedBootstrap(interval, exceed, exceed / resamples, False)


def cluster_paired_t_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    clusters: Clusters | Sequence[str],
    *,
    with_p: bool = True,
):
    """Cluster-robust two-sided paired t-test of a − b (CR1 variance, C − 1 degrees of freedom).

    ``with_p=False`` leaves the p-value NaN for a caller that computes many at once
    (:func:`comparna.rna.statistics.t_pvalues`).

    Returns
    -------
    comparna.rna.statistics.TTest
        ``df`` = C − 1. NaN statistic and p-value with fewer than two clusters or zero variance and zero mean.
    """
    from comparna.rna.statistics import TTest, t_pvalues

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    c = _clusters(clusters, d.size)
    k = c.count
    mean = d.mean()
    if k < 2:
        return TTest(float("nan"), float("nan"), k - 1, float(mean))
    se = cluster_standard_error(d, c)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
    p = t_pvalues(t, k - 1) if with_p else np.nan
    return TTest(float(t), float(p), k - 1, float(mean))


def cluster_standard_error(d: np.ndarray, clusters: Clusters | Sequence[str]) -> float:
    """CR1 cluster-robust standard error of the mean of ``d``: sqrt(C/(C−1)·Σ_c (D_c − n_c·d̄)²) / N."""
    d = np.asarray(d, dtype=np.float64)
    c = _clusters(clusters, d.size)
    k = c.count
    if k < 2:
        return float("nan")
    residual = np.bincount(c.codes, weights=d - d.mean(), minlength=k)
    return float(np.sqrt(k / (k - 1) * np.sum(residual**2)) / d.size)


def equivalence_verdict(low: float, high: float, delta: float = EQUIVALENCE_DELTA) -> str:
    """"practically equal" if (low, high) ⊂ (−δ, δ); "practically different" if it misses (−δ, δ);
    else "undetermined"."""
    if -delta < low and high < delta:
        return PRACTICALLY_EQUAL
    if low >= delta or high <= -delta:
        return PRACTICALLY_DIFFERENT
    return UNDETERMINED


@dataclass(frozen=True)
class PooledDifference:
    """Difference of pooled MCCs (method a − method b) over common targets, with clustered uncertainty.

    Attributes
    ----------
    estimate : float
        MCC(pooled counts of a) − MCC(pooled counts of b).
    low, high : float
        Cluster bootstrap percentile interval at ``confidence`` (default 90 %, for the equivalence test).
    verdict : str
        :func:`equivalence_verdict` of the interval with ``delta``.
    targets, clusters : int
    """

    estimate: float
    low: float
    high: float
    verdict: str
    delta: float
    confidence: float
    targets: int
    clusters: int
    resamples: int

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def pooled_mcc_difference(
    counts_a: np.ndarray,
    counts_b: np.ndarray,
    clusters: Clusters | Sequence[str],
    *,
    delta: float = EQUIVALENCE_DELTA,
    confidence: float = EQUIVALENCE_CONFIDENCE,
    resamples: int = 10_000,
    seed: int = 0,
) -> PooledDifference:
    """Cluster bootstrap of the difference of pooled MCCs and the equivalence verdict.

    Parameters
    ----------
    counts_a, counts_b : numpy.ndarray
        (n, 5) per-target counts in :data:`comparna.rna.ranking.COUNT_FIELDS` order (tp, fn, fp,
        fp_compatible, tn), the same targets in the same order.
    clusters : Clusters or sequence of labels
    """
    a = np.asarray(counts_a, dtype=np.float64)
    b = np.asarray(counts_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 5:
        raise ValueError("counts must be two (n, 5) arrays of the same targets")
    c = _clusters(clusters, a.shape[0])
    sums_a = np.stack([np.bincount(c.codes, weights=a[:, k], minlength=c.count) for k in range(5)], axis=1)
    sums_b = np.stack([np.bincount(c.codes, weights=b[:, k], minlength=c.count) for k in range(5)], axis=1)
    estimate = float(mcc_from_arrays(*a.sum(axis=0)) - mcc_from_arrays(*b.sum(axis=0)))
    rng = np.random.default_rng(seed)
    draws = []
    for w in _multiplicities(rng, c.count, resamples):
        pa, pb = w @ sums_a, w @ sums_b
        draws.append(mcc_from_arrays(*pa.T) - mcc_from_arrays(*pb.T))
    low, high = _percentiles(np.concatenate(draws), confidence)
    return PooledDifference(estimate, low, high, equivalence_verdict(low, high, delta), delta, confidence,
                            a.shape[0], c.count, resamples)


# ----------------------------------------------------------------------- clustered signed-rank test
#: Up to this many clusters the 2^C sign flips can be enumerated outright (:func:`_enumerated_pvalue`, kept as
#: an independent check of :func:`comparna.rna.signflip.sign_flip_test`, which counts them).
ENUMERATE_CLUSTERS = 20


@dataclass(frozen=True)
class SignedRankTest:
    """Outcome of :func:`clustered_signed_rank_test`.

    Attributes
    ----------
    statistic : float
        T = Σ_i sign(d_i)·rank(|d_i|) over the non-zero differences (average ranks for ties): positive when
        the first method tends to be better.
    pvalue : float
        Two-sided p of T under the family sign-flip null; NaN when every difference is zero.
    n : int
        Non-zero differences (targets) in the test.
    clusters : int
        Clusters holding at least one non-zero difference (the number of independent signs).
    method : str
        :func:`comparna.rna.signflip.sign_flip_test`'s: "exact" (the 2^C sign flips counted), "saddlepoint"
        (only far outside the decision band), "bracket" (exact bounds) or "undecided" (show "?").
    low, high : float
        Exact bounds of the p-value (both equal to it when "exact").
    """

    statistic: float
    pvalue: float
    n: int
    clusters: int
    method: str
    low: float = math.nan
    high: float = math.nan


def clustered_signed_rank_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    clusters: Clusters | Sequence[str] | np.ndarray | None = None,
    *,
    band: tuple[float, float] | None = None,
    budget: int = EXACT_BUDGET,
    hard_budget: int = HARD_BUDGET,
) -> SignedRankTest:
    """Paired Wilcoxon signed-rank test of a − b that respects families (the primary ranking verdict).

    The differences d = a − b of one pair's common targets are ranked by |d| over all targets (zeros
    dropped, average ranks for ties; Wilcoxon 1945) and the signed ranks are summed per family (cluster):
    S_c. The statistic is T = Σ_c S_c. Under the null hypothesis the differences of a family are
    symmetric about 0 *jointly* (a family's signs flip together, families independent), so the null
    distribution of T is that of Σ_c ±S_c over all 2^C sign flips — a sign-flip permutation test of
    family-summed signed ranks. This is the clustered Wilcoxon signed-rank test of Rosner, Glynn & Lee
    (Biometrics 59:1089–1098, 2003; 62:185–192, 2006), which uses the same T with the randomisation
    variance Σ_c S_c² and a normal form; here the p comes from the exact permutation distribution
    (:func:`comparna.rna.signflip.sign_flip_test`: counted where cheap or near the decision ``band``, a
    saddlepoint approximation only far outside it, exact brackets or "undecided" where counting is too
    dear). With one target per cluster it is the ordinary exact Wilcoxon signed-rank test.

    Parameters
    ----------
    a, b : array_like
        Per-target scores (MCC) of the two methods on the same targets.
    clusters : Clusters, labels or integer codes, optional
        The family of every target; None: every target is its own family.
    band, budget, hard_budget
        As for :func:`comparna.rna.signflip.sign_flip_test` (band None: exact as far as the hard budget
        allows).

    Returns
    -------
    SignedRankTest
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if clusters is None:
        codes = np.arange(d.size)
    elif isinstance(clusters, np.ndarray) and clusters.dtype.kind in "iu":
        codes = clusters
    else:
        codes = _clusters(clusters, d.size).codes
    if codes.size != d.size:
        raise ValueError(f"{codes.size} cluster labels for {d.size} targets")
    sums, n = _signed_rank_sums(d, np.asarray(codes))
    out = sign_flip_test(sums, band=band, budget=budget, hard_budget=hard_budget)
    return SignedRankTest(float(sums.sum()) / 2, out.p, n, int(sums.size), out.method, out.low, out.high)
