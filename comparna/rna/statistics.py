"""Statistics that make a benchmark result trustworthy (SCIENCE.md §6).

- Bootstrap percentile confidence intervals of a mean per-structure score (Hajiaghayi, Condon & Hoos 2012,
  BMC Bioinformatics 13:22): 10 000 resamples with replacement, 2.5th and 97.5th percentiles.
- Paired comparisons of two methods on the same RNAs (Xu, Almudevar & Mathews 2012, NAR 40:e26): two-sided
  paired t-test on per-target differences, paired bootstrap CI of the mean difference, Spearman correlation
  of per-target scores, the sample size needed ``n = V_d (z_{1-β} + z_{1-α/2})² / δ²`` and the a-posteriori
  power; the verdict different / equivalent / inconclusive.
- Holm (1979) and Benjamini-Hochberg (1995) adjustment across a pairwise matrix.

The group-sequential boundary for the weekly-growing PDB set is in :mod:`comparna.rna.group_sequential`.

Resampling p-values are never reported as 0: with R resamples and no exceedance they are "< 1/R".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

RESAMPLES = 10_000
CONFIDENCE = 0.95


# --------------------------------------------------------------------------------------------- bootstrap
@dataclass(frozen=True)
class ConfidenceInterval:
    """A point estimate with a bootstrap percentile interval.

    Attributes
    ----------
    estimate : float
        The statistic on the original sample (the mean).
    low, high : float
        The (1 − confidence)/2 and (1 + confidence)/2 percentiles of the bootstrap distribution.
    n : int
        Sample size; ``small`` flags n < 100, where intervals are wide (Hajiaghayi et al.: n = 89 gave 0.075).
    resamples : int
    confidence : float
    """

    estimate: float
    low: float
    high: float
    n: int
    resamples: int
    confidence: float

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def small(self) -> bool:
        return self.n < 100


def resample_indices(rng: np.random.Generator, n: int, resamples: int, *, chunk: int = 1000):
    """Yield blocks of bootstrap index rows (with replacement), ``chunk`` rows at a time, ``resamples`` rows.

    Blocks bound the memory (10 000 × 2000 int64 indices would take 160 MB at once). The indices are int32
    below 2^31: numpy draws a bounded integer below 2^32 from the same 32-bit stream whatever the output
    type, so they are the values ``rng.integers(0, n, size=(rows, n))`` gives, at half the memory; and the
    stream does not depend on the block size (the blocks of any ``chunk`` concatenate to the same rows).
    """
    dtype = np.int32 if n < 2**31 else np.int64
    done = 0
    while done < resamples:
        rows = min(chunk, resamples - done)
        yield rng.integers(0, n, size=(rows, n), dtype=dtype)
        done += rows


#: Bootstrap indices drawn per block by :func:`bootstrap_means`: small enough for the block and its gathered
#: values to stay in cache (much faster than 1000-row blocks, whose fresh memory is paged in every block).
_BLOCK_ELEMENTS = 1 << 16


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
    n = x.shape[-1]
    rng = np.random.default_rng(seed)
    chunk = max(1, _BLOCK_ELEMENTS // n)
    # x[..., idx], not np.take: for paired (2-D) values its layout (the pairs innermost) sets the summation
    # order of the means, which must not change
    blocks = [x[..., idx].mean(axis=-1) for idx in resample_indices(rng, n, resamples, chunk=chunk)]
    return np.concatenate(blocks, axis=-1)


def bootstrap_ci_mean(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> ConfidenceInterval:
    """Bootstrap percentile CI of the mean (Efron 1979; Hajiaghayi et al. 2012).

    The percentiles use numpy's default linear interpolation between order statistics. With ``clusters``
    (one label per value, e.g. the Rfam family) whole clusters are resampled
    (:func:`comparna.rna.clustered.cluster_bootstrap_ci_mean`).
    """
    if clusters is not None:
        from comparna.rna.clustered import cluster_bootstrap_ci_mean

        return cluster_bootstrap_ci_mean(
            values, clusters, resamples=resamples, confidence=confidence, seed=seed
        )
    x = np.asarray(values, dtype=np.float64)
    means = bootstrap_means(x, resamples=resamples, seed=seed)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return ConfidenceInterval(float(x.mean()), float(low), float(high), x.size, resamples, confidence)


# ------------------------------------------------------------------------------------------ paired tests
@dataclass(frozen=True)
class TTest:
    """Two-sided paired t-test: ``t = mean(d) / (sd(d) / sqrt(n))`` with n − 1 degrees of freedom."""

    statistic: float
    pvalue: float
    df: int
    mean_difference: float


def paired_t_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, clusters: Sequence[str] | None = None
) -> TTest:
    """Two-sided paired t-test of a − b (Student 1908; Xu et al. 2012); agrees with scipy.stats.ttest_rel.

    All differences zero gives t = NaN and p = NaN (as scipy); equal non-zero differences give t = ±inf and
    p = 0. With ``clusters``, the cluster-robust test (:func:`comparna.rna.clustered.cluster_paired_t_test`).
    """
    if clusters is not None:
        from comparna.rna.clustered import cluster_paired_t_test

        return cluster_paired_t_test(a, b, clusters)
    return paired_t_test_of(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))


def paired_t_test_of(d: np.ndarray, *, with_p: bool = True) -> TTest:
    """:func:`paired_t_test` of the differences ``d`` (float64); ``with_p=False`` leaves the p-value NaN for
    a caller that computes many at once with :func:`t_pvalues`."""
    n = d.size
    if n < 2:
        raise ValueError("a paired t-test needs at least two pairs")
    mean = d.mean()
    se = d.std(ddof=1) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
    p = t_pvalues(t, n - 1) if with_p else np.nan
    return TTest(float(t), float(p), n - 1, float(mean))


def t_pvalues(t, df) -> np.ndarray:
    """Two-sided p-values of Student's t, elementwise: 2·P(T_df ≥ |t|) — exactly ``2 * scipy.stats.t.sf(
    abs(t), df)`` (its survival function is ``stdtr(df, −t)``), without its per-call overhead; NaN where t
    is NaN, 0 where it is infinite."""
    return 2 * special.stdtr(df, -np.abs(np.asarray(t, dtype=np.float64)))


@dataclass(frozen=True)
class PairedBootstrap:
    """Paired bootstrap of the mean difference a − b.

    Attributes
    ----------
    interval : ConfidenceInterval
        Percentile CI of the mean difference.
    exceedances : int
        Resamples whose centred mean difference is at least as far from 0 as the observed one.
    pvalue : float
        ``exceedances / resamples``, or ``1 / resamples`` as an upper bound when no resample exceeded
        (``pvalue_is_bound``); use :func:`format_p_value` to print it.
    """

    interval: ConfidenceInterval
    exceedances: int
    pvalue: float
    pvalue_is_bound: bool

    @property
    def pvalue_text(self) -> str:
        bound = self.interval.resamples if self.pvalue_is_bound else None
        return format_p_value(self.pvalue, resamples=bound)


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> PairedBootstrap:
    """Paired bootstrap: resample targets (the same ones for both methods) and recompute the mean difference.

    The two-sided p-value tests a zero mean difference by centring the bootstrap distribution at 0 (Efron &
    Tibshirani 1993, §16.4). With ``clusters``, whole clusters are resampled
    (:func:`comparna.rna.clustered.cluster_paired_bootstrap`).
    """
    if clusters is not None:
        from comparna.rna.clustered import cluster_paired_bootstrap

        return cluster_paired_bootstrap(a, b, clusters, resamples=resamples, confidence=confidence, seed=seed)
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    means = bootstrap_means(d, resamples=resamples, seed=seed)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    observed = d.mean()
    exceed = int((np.abs(means - observed) >= abs(observed)).sum())
    interval = ConfidenceInterval(float(observed), float(low), float(high), d.size, resamples, confidence)
    if exceed == 0:
        return PairedBootstrap(interval, 0, 1.0 / resamples, True)
    return PairedBootstrap(interval, exceed, exceed / resamples, False)


def format_p_value(p: float, *, resamples: int | None = None) -> str:
    """A p-value for display; never "0".

    With ``resamples`` given and ``p <= 1/resamples`` (no resample exceeded) it is "< 1/R", e.g. "< 0.0001";
    analytic p-values below 1e-16 print as "< 1e-16".
    """
    if np.isnan(p):
        return "n/a"
    if resamples is not None and p <= 1.0 / resamples:
        return f"< {1.0 / resamples:g}"
    if p < 1e-16:
        return "< 1e-16"
    return f"{p:.2g}"


def spearman_matrix(scores: np.ndarray) -> np.ndarray:
    """Spearman rank correlation between the per-target scores of every pair of methods.

    Parameters
    ----------
    scores : numpy.ndarray
        (methods, targets); NaN marks a missing score, in which case each pair uses the targets both scored
        (pairwise complete). Ties get average ranks.

    Returns
    -------
    numpy.ndarray
        (methods, methods); equals ``scipy.stats.spearmanr`` of each pair. NaN when fewer than 2 common
        targets or a constant score vector.
    """
    x = np.asarray(scores, dtype=np.float64)
    m = x.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        if not np.isnan(x).any():
            ranks = sps.rankdata(x, axis=1)
            return np.corrcoef(ranks) if m > 1 else np.ones((1, 1))
        out = np.eye(m)
        ok = ~np.isnan(x)
        for i in range(m):
            for j in range(i + 1, m):
                both = ok[i] & ok[j]
                if both.sum() < 2:
                    out[i, j] = out[j, i] = np.nan
                    continue
                ri, rj = sps.rankdata(x[i, both]), sps.rankdata(x[j, both])
                out[i, j] = out[j, i] = np.corrcoef(ri, rj)[0, 1]
    return out


# ----------------------------------------------------------------------------------- power, sample size
def sample_size(variance_difference: float, delta: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """RNAs needed to detect a mean difference ``delta`` (Xu et al. 2012).

    ``n = V_d · (z_{1−β} + z_{1−α/2})² / δ²``, rounded up, with V_d the variance of the per-target
    differences, β = 1 − power.
    """
    if delta == 0:
        raise ValueError("delta must be non-zero")
    z = special.ndtri(power) + special.ndtri(1 - alpha / 2)
    return int(np.ceil(variance_difference * z * z / (delta * delta)))


def posterior_power(variance_difference: float, delta: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided paired test with n RNAs to detect a mean difference ``delta`` (normal approx.).

    ``Φ(|δ|·√n/σ_d − z_{1−α/2}) + Φ(−|δ|·√n/σ_d − z_{1−α/2})``; the inverse of :func:`sample_size`.
    """
    if variance_difference <= 0:
        return 1.0 if delta != 0 else alpha
    shift = abs(delta) * np.sqrt(n / variance_difference)
    z = special.ndtri(1 - alpha / 2)
    return float(special.ndtr(shift - z) + special.ndtr(-shift - z))


@dataclass(frozen=True)
class PairedComparison:
    """Everything shown for one method pair on one subset.

    Attributes
    ----------
    n : int
    t_test : TTest
    bootstrap : PairedBootstrap
    spearman : float
    power : float
        A-posteriori power to detect a difference of ``delta`` with the observed V_d and n.
    n_required : int
        RNAs needed for that power (:func:`sample_size`).
    further_needed : int
        ``max(0, n_required − n)``.
    verdict : str
        "different" (p < α), "equivalent" (not different and power > the target power: a difference of
        ``delta`` would have been found) or "inconclusive".
    delta, alpha : float
    clusters : int or None
        Number of clusters when the comparison was clustered, else None.
    design_effect : float
        Variance of the mean difference relative to independent targets (1 when not clustered).
    """

    n: int
    t_test: TTest
    bootstrap: PairedBootstrap
    spearman: float
    power: float
    n_required: int
    further_needed: int
    verdict: str
    delta: float
    alpha: float
    clusters: int | None = None
    design_effect: float = 1.0


def compare_paired(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    delta: float = 0.02,
    alpha: float = 0.05,
    power: float = 0.8,
    resamples: int = RESAMPLES,
    seed: int = 0,
    pvalue: float | None = None,
    clusters: Sequence[str] | None = None,
) -> PairedComparison:
    """Compare two methods' per-target scores on the same RNAs (Xu et al. 2012).

    Parameters
    ----------
    a, b : array_like
        Per-target scores of the two methods on their common targets (same order).
    delta : float
        The smallest difference worth detecting **[convention: 0.02 MCC]**; it sets the power, the sample
        size and the "equivalent" verdict.
    pvalue : float, optional
        An adjusted p-value (Holm/BH across the matrix) to use for the verdict instead of the t-test's.
    clusters : sequence of str, optional
        One cluster label per target (Rfam family, else sequence cluster): the t-test is cluster-robust, the
        bootstrap resamples clusters, and power and sample size use the cluster-robust variance of the mean
        difference (V_d times the design effect, Kish 1965).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    t = paired_t_test(a, b, clusters=clusters)
    boot = paired_bootstrap(a, b, resamples=resamples, seed=seed, clusters=clusters)
    v_d = float(np.var(a - b, ddof=1))
    n_clusters, deff = None, 1.0
    if clusters is not None:
        from comparna.rna.clustered import cluster_codes, cluster_standard_error

        codes = cluster_codes(clusters)
        n_clusters = codes.count
        se = cluster_standard_error(a - b, codes)
        if v_d > 0 and np.isfinite(se):
            deff = float(se * se * a.size / v_d)
    achieved = posterior_power(v_d * deff, delta, a.size, alpha=alpha)
    needed = sample_size(v_d, delta, alpha=alpha, power=power)
    if deff != 1.0:
        needed = int(np.ceil(needed * deff))
    p = t.pvalue if pvalue is None else pvalue
    if not np.isnan(p) and p < alpha:
        verdict = "different"
    elif achieved > power:
        verdict = "equivalent"
    else:
        verdict = "inconclusive"
    rho = float(spearman_matrix(np.vstack([a, b]))[0, 1])
    further = max(0, needed - a.size)
    return PairedComparison(
        a.size, t, boot, rho, achieved, needed, further, verdict, delta, alpha, n_clusters, deff
    )


# ------------------------------------------------------------------------------------- multiple testing
def _adjust(pvalues: Sequence[float] | np.ndarray, ascending_rule) -> np.ndarray:
    """Apply ``ascending_rule(sorted p-values, m)`` to the non-NaN p-values; results in the input order, NaNs
    stay NaN and do not count in m."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="stable")
    result = np.empty(m)
    result[order] = ascending_rule(q[order], m)
    out[ok] = result
    return out


def holm_adjust(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values (family-wise error rate), in the input order.

    ``p_(i)^adj = max_{j <= i} min(1, (m − j + 1) · p_(j))`` over the ascending p-values. NaNs stay NaN and
    do not count in m.
    """
    return _adjust(pvalues, lambda q, m: _holm_sorted(q[None, :])[0])


def _holm_sorted(q: np.ndarray) -> np.ndarray:
    """Holm's rule on rows of ascending p-values: max_{j <= i} min(1, (m − j + 1)·p_(j))."""
    m = q.shape[1]
    return np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * q, axis=1))


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values of every row of ``p`` (R, P) at once, each row its own family of P tests (no
    NaNs): the same values as :func:`holm_adjust` of each row."""
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(p, axis=1, kind="stable")
    q = _holm_sorted(np.take_along_axis(p, order, axis=1))
    adjusted = np.empty_like(q)
    np.put_along_axis(adjusted, order, q, axis=1)
    return adjusted


def holm_sides(low: np.ndarray, high: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Which Holm rejections at ``alpha`` are certain and which possible when each p is only known to lie in
    [low, high] (1-D: one family of tests, NaNs not counted; 2-D: every row its own family).

    Holm's step-down procedure is monotone: lowering any p never withdraws a rejection (the order statistics
    only fall, so every step's comparison only gets easier). So the rejections with every p at its upper
    bound are certain, those with every p at its lower bound the only possible ones; a test in the second
    set but not the first is the one whose decision the bounds leave open. Returns (certain, possible).
    """
    adjust = holm_adjust if np.ndim(low) == 1 else holm_rows
    with np.errstate(invalid="ignore"):
        return adjust(high) < alpha, adjust(low) < alpha


def bh_adjust(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg (1995) step-up adjusted p-values (false discovery rate), in the input order.

    ``p_(i)^adj = min_{j >= i} min(1, m · p_(j) / j)`` over the ascending p-values. NaNs stay NaN.
    """
    def step_up(q: np.ndarray, m: int) -> np.ndarray:
        scaled = q * m / np.arange(1, m + 1)
        return np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])

    return _adjust(pvalues, step_up)
