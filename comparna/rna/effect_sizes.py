"""Effect sizes beside the clustered signed-rank verdict (issue 35, SCIENCE.md §5): the Hodges–Lehmann shift
with its family-clustered interval, and the family-clustered interval of the mean difference that the
equivalence ("=") rule reads (two one-sided tests)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from comparna.rna.saddlepoint import _logcosh, _sech2
from comparna.rna.signed_ranks import _signed_rank_sums


class HodgesLehmann(NamedTuple):
    """The Hodges–Lehmann shift (median of the Walsh averages) with its family-clustered interval."""

    estimate: float
    low: float
    high: float
    n: int
    clusters: int


#: Candidates sampled per selection round for the two pivots.
_SAMPLE = 8192


def _upto(x: np.ndarray, pivot: float, strict: bool) -> np.ndarray:
    """Per row i of sorted ``x``, #{j : x_i + x_j ≤ pivot} (< when ``strict``), judged on the float sums
    themselves (a binary search on pivot − x_i, then moved across whole runs of equal values where
    rounding put it on the wrong side)."""
    n = x.size
    # the keys pivot − x fall as x rises: searched in ascending order (numpy reuses each result as a bound)
    j = np.searchsorted(x, (pivot - x)[::-1], side="left" if strict else "right")[::-1].copy()
    for _ in range(n + 1):
        ahead = np.minimum(j, n - 1)
        behind = np.maximum(j - 1, 0)
        if strict:
            up = np.flatnonzero((j < n) & (x + x[ahead] < pivot))
            down = np.flatnonzero((j > 0) & (x + x[behind] >= pivot))
        else:
            up = np.flatnonzero((j < n) & (x + x[ahead] <= pivot))
            down = np.flatnonzero((j > 0) & (x + x[behind] > pivot))
        if up.size == 0 and down.size == 0:
            return j
        j[up] = np.searchsorted(x, x[ahead[up]], side="right")
        j[down] = np.searchsorted(x, x[behind[down]], side="left")
    return j


def walsh_order_statistic(x: np.ndarray, k: int, *, seed: int = 0) -> float:
    """The k-th smallest (1-based) Walsh sum x_i + x_j (i ≤ j) of sorted ``x``, without forming the n(n+1)/2
    sums: a randomised selection over the rows of the implicit sorted matrix (after Monahan 1984). Each
    round draws a sample of the candidates still in play, takes two pivots around the k-th's expected
    place in it, and counts the sums below them (one binary search per row, O(n log n)): the candidates
    shrink ~15-fold a round (a few rounds); the last ≤ 4n are sorted. Returns the sum (halve it for the
    Walsh average)."""
    n = x.size
    total = n * (n + 1) // 2
    if not 1 <= k <= total:
        raise ValueError(f"k = {k} outside 1 … {total}")
    rng = np.random.default_rng(seed)
    rows = np.arange(n)
    left = rows.copy()  # per row i: the candidates are columns left[i] … right[i] − 1 (j ≥ i)
    right = np.full(n, n)
    below = 0  # sums known to be smaller than every candidate
    while True:
        sizes = right - left
        ends = np.cumsum(sizes)
        alive = int(ends[-1])
        if alive <= max(4 * n, 4096):
            starts = ends - sizes
            row_ix = np.repeat(rows, sizes)
            col_ix = np.arange(alive) - np.repeat(starts, sizes) + np.repeat(left, sizes)
            return float(np.partition(x[row_ix] + x[col_ix], k - below - 1)[k - below - 1])
        # two pivots from a sample of the candidates, around the k-th's expected place in the sample
        starts = ends - sizes
        picks = rng.integers(alive, size=_SAMPLE)
        row = np.searchsorted(ends, picks, side="right")
        sample = np.sort(x[row] + x[left[row] + picks - starts[row]])
        share = (k - below) / alive
        margin = 3 * math.sqrt(share * (1 - share) / _SAMPLE) + 2 / _SAMPLE
        low_pivot = float(sample[max(0, math.floor((share - margin) * _SAMPLE))])
        high_pivot = float(sample[min(_SAMPLE - 1, math.ceil((share + margin) * _SAMPLE))])
        under = np.clip(_upto(x, low_pivot, True), left, right)  # sums < the lower pivot
        below_low = below + int((under - left).sum())
        if below_low >= k:  # the k-th is below the lower pivot
            right = under
            continue
        upto = np.clip(_upto(x, high_pivot, False), left, right)  # sums ≤ the upper pivot
        at_most = below + int((upto - left).sum())
        if at_most < k:  # above the upper pivot
            below, left = at_most, upto
            continue
        if low_pivot == high_pivot:
            return low_pivot
        below, left, right = below_low, under, upto


def _next_walsh(x: np.ndarray, value: float, k: int) -> float:
    """The k-th smallest Walsh sum of sorted ``x`` when the (k−1)-th is ``value``: ``value`` itself if at
    least k sums are ≤ it, else the smallest sum above it (one pass instead of a second selection)."""
    rows = np.arange(x.size)
    upto = np.maximum(_upto(x, value, False), rows)  # per row i, the first column j ≥ i with a sum > value
    if int((upto - rows).sum()) >= k:
        return value
    live = upto < x.size
    return float((x[rows[live]] + x[upto[live]]).min())


def _saddlepoint_critical(a: np.ndarray, level: float) -> float:
    """The x with 2·P(X ≥ x) = ``level`` for X = Σ ε_c a_c, by the saddlepoint (bisection on the
    saddlepoint t itself: the Lugannani–Rice tail falls as t rises, so no inner Newton is needed)."""
    a = a.astype(np.float64)
    if a.size == 0:
        return 0.0
    sd = math.sqrt(float((a * a).sum()))

    def tail(t: float) -> tuple[float, float]:
        x = float((a * np.tanh(t * a)).sum())
        kx = float(_logcosh(t * a).sum())
        k2 = float((a * a * _sech2(t * a)).sum())
        w = math.sqrt(max(0.0, 2 * (t * x - kx)))
        if w < 1e-6 or k2 <= 0:
            return x, 1.0
        u = t * math.sqrt(k2)
        density = math.exp(-w * w / 2) / math.sqrt(2 * math.pi)
        return x, 2 * (0.5 * math.erfc(w / math.sqrt(2)) + density * (1 / w - 1 / u))

    lo_t, hi_t = 0.0, 1.0 / sd
    while tail(hi_t)[1] > level and hi_t < 1e6 / sd:
        hi_t *= 2
    for _ in range(60):
        mid = (lo_t + hi_t) / 2
        if tail(mid)[1] > level:
            lo_t = mid
        else:
            hi_t = mid
    return tail(hi_t)[0]


def hodges_lehmann(
    d: Sequence[float] | np.ndarray,
    codes: Sequence[int] | np.ndarray,
    *,
    confidence: float = 0.95,
    seed: int = 0,
) -> HodgesLehmann:
    """Hodges–Lehmann shift of paired differences with a family-clustered interval (clustered inversion).

    The estimate is the median of the n(n+1)/2 Walsh averages (d_i + d_j)/2, i ≤ j (exact, by
    :func:`walsh_order_statistic`; never the O(n²) array). The interval inverts the clustered signed-rank
    test, as the classical Wilcoxon interval inverts the signed-rank test: T(θ) = W⁺(θ) − W⁻(θ) counts the
    Walsh averages above minus below θ, so {θ : |T(θ)| < t} is the span from the k-th to the (M+1−k)-th
    smallest Walsh average, k = ⌈(M − t)/2⌉, M = n(n+1)/2. The critical t is that of the family sign-flip
    null of the signed ranks of d − θ̂ summed per family (2·P(Σ ε_c S_c ≥ t) = 1 − confidence, by the
    saddlepoint: an effect-size interval, not a verdict). Freezing the null at θ̂ is the approximation; with
    one target per family it is the usual Wilcoxon interval up to ties. ``clusters`` of the result: the
    families. NaN estimate for no differences. ``seed`` drives the selection's pivots only (the result
    does not depend on it).
    """
    x = np.sort(np.asarray(d, dtype=np.float64))
    g = np.asarray(codes)
    n = x.size
    clusters = int(np.unique(g).size) if n else 0
    if n == 0:
        return HodgesLehmann(math.nan, math.nan, math.nan, 0, 0)
    total = n * (n + 1) // 2
    if total % 2:
        estimate = walsh_order_statistic(x, (total + 1) // 2, seed=seed) / 2
    else:
        first = walsh_order_statistic(x, total // 2, seed=seed)
        estimate = (first + _next_walsh(x, first, total // 2 + 1)) / 4
    diffs = np.asarray(d, dtype=np.float64) - estimate
    sums, _ = _signed_rank_sums(diffs, g)
    critical = _saddlepoint_critical(np.abs(sums[sums != 0]), 1 - confidence) / 2  # single-rank units
    k = max(1, math.ceil((total - critical) / 2))
    if k > total // 2:
        k = max(1, total // 2)
    low = walsh_order_statistic(x, k, seed=seed) / 2
    high = walsh_order_statistic(x, total + 1 - k, seed=seed) / 2
    return HodgesLehmann(estimate, low, high, n, clusters)


# ----------------------------------------------------------------------- equivalence (TOST) interval
def _intraclass(x: np.ndarray, local: np.ndarray, sizes: np.ndarray) -> float:
    """One-way ANOVA estimate of the intra-family correlation of ``x``, clipped to [0, 0.99]."""
    n, c = x.size, sizes.size
    if n <= c:
        return 0.0
    means = np.bincount(local, weights=x, minlength=c) / sizes
    within = float(((x - means[local]) ** 2).sum()) / (n - c)
    between = float((sizes * (means - x.mean()) ** 2).sum()) / (c - 1)
    n0 = (n - float((sizes * sizes).sum()) / n) / (c - 1)
    spread = (between - within) / n0 if n0 > 0 else 0.0
    if within + spread <= 0:
        return 0.0
    return min(0.99, max(0.0, spread / (spread + within)))


def _bell_mccaffrey_df(sizes: np.ndarray, keep: np.ndarray, rho: float) -> float:
    """Satterthwaite degrees of freedom ν = (tr H)²/tr H² of the CR2 variance of a mean, H = B'MΩMB
    (B: the families' CR2 weight columns a_c·1_c, a_c = 1/(N√(1 − n_c/N)); M = I − J/N; Ω the working
    covariance, exchangeable within families with correlation ρ: Ω·1_c = γ_c·1_c, γ_c = 1 − ρ + ρ n_c).
    H = diag(a²γn) − (g x' + x g')/N + (S/N²) x x' with x = a∘n, g = a∘γ∘n, S = Σ γ_c n_c: traces in O(C)."""
    n = float(sizes.sum())
    a = 1 / (n * np.sqrt(keep))
    gamma = 1 - rho + rho * sizes
    x, g = a * sizes, a * gamma * sizes
    diag = a * a * gamma * sizes
    total = float((gamma * sizes).sum())
    alpha, beta = -1 / n, total / n**2
    gx, xx, gg = float(g @ x), float(x @ x), float(g @ g)
    trace = float(diag.sum()) + 2 * alpha * gx + beta * xx
    low_rank = alpha**2 * (2 * gg * xx + 2 * gx * gx) + beta**2 * xx * xx + 4 * alpha * beta * gx * xx
    cross = float((diag * (2 * alpha * g * x + beta * x * x)).sum())
    frob = float((diag * diag).sum()) + low_rank + 2 * cross
    return trace * trace / frob


def clustered_mean_interval(
    d: Sequence[float] | np.ndarray,
    codes: Sequence[int] | np.ndarray,
    *,
    confidence: float = 0.90,
) -> tuple[float, float]:
    """Family-clustered ``confidence`` interval of the mean of ``d``: d̄ ± t_ν·SE_CR2 (Bell, McCaffrey 2002).

    The mean is the intercept of a regression on a constant, so the CR2 ("bias-reduced linearisation")
    variance has a closed form: each family's residual sum E_c = Σ_{i∈c}(d_i − d̄) is scaled by
    (1 − n_c/N)^−½ (the inverse square root of I − H_cc, H = J/N), SE² = Σ_c E_c² / (1 − n_c/N) / N².
    The degrees of freedom are Bell & McCaffrey's Satterthwaite ν (:func:`_bell_mccaffrey_df`) under the
    working model of an exchangeable correlation within families, ρ the ANOVA estimate (Imbens & Kolesár
    2016 recommend a working model with the clustering in it): ν ≈ C − 1 for equal families and falls towards
    1 as one family dominates — where CR1 with t_{C−1} (Liang & Zeger; Cameron & Miller) under-covers badly.
    At 90 % the interval is that of
    Schuirmann's two one-sided tests at 5 %: "=" when it lies inside (−δ, δ). Fewer than two families, or
    one holding every target: (−inf, inf) (no equivalence can be shown). Coverage is simulated in
    ``bench/bench_verdicts.py``.
    """
    from scipy import stats

    x = np.asarray(d, dtype=np.float64)
    g = np.asarray(codes)
    if x.size == 0:
        return -math.inf, math.inf
    _, local = np.unique(g, return_inverse=True)
    c = int(local.max()) + 1
    if c < 2:
        return -math.inf, math.inf
    n = x.size
    sizes = np.bincount(local, minlength=c).astype(np.float64)
    mean = float(x.mean())
    residual = np.bincount(local, weights=x - mean, minlength=c)
    keep = 1 - sizes / n
    se = math.sqrt(float((residual**2 / keep).sum())) / n
    df = _bell_mccaffrey_df(sizes, keep, _intraclass(x, local, sizes))
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * se
    return mean - half, mean + half
