"""The exact family sign-flip null of the clustered signed-rank test, the effect sizes beside it (issue 35).

Public names (stable signatures; :mod:`comparna.rna.clustered` re-exports the first two)::

    sign_flip_test(sums, *, band=None, thresholds=(), budget=EXACT_BUDGET, hard_budget=HARD_BUDGET)
        -> SignFlipP(p, method, low, high)
    sign_flip_pvalue(sums, *, band=None, ...) -> (p, method)
    resampled_pvalues(signed, weights, *, band, cell_budget=CELL_BUDGET) -> (R, P) numpy.ndarray
    hodges_lehmann(d, codes, *, confidence=0.95, seed=0) -> HodgesLehmann(estimate, low, high, n, clusters)
    clustered_mean_interval(d, codes, *, confidence=0.90) -> (low, high)

**The null.** ``sums`` are the per-family sums S_c of doubled signed ranks (integers,
:func:`comparna.rna.clustered._signed_rank_sums`). Under H0 every family's signs flip together, families
independently: X = Σ ε_c |S_c|, ε_c = ±1 with probability ½. The two-sided p of T = Σ S_c is
P(|X| ≥ |T|) = 2·P(X ≥ |T|) (X is symmetric). X ≥ |T| exactly when the families flipped to "−" have
|S_c| summing to at most m = (Σ|S_c| − |T|)/2, so p = 2·#{subsets of the |S_c| with sum ≤ m} / 2^C: a
subset-sum count truncated at m (cost C·m element operations, cheap in the far tail, where m is small).

**Where the exact count is too dear** (C·m above ``budget``) the Lugannani–Rice saddlepoint approximation on
K(t) = Σ_c log cosh(t·S_c) is used, with Daniels' second continuity correction for the lattice of X (span
2·gcd|S_c|). An approximation never decides: when it lies within a factor of 10 of the caller's decision
band [lo, hi] (p_sp ≥ lo/10 and p_sp ≤ 10·hi) the p is computed exactly — by the count when C·m ≤
``hard_budget``, else by exact **brackets** from coarsened weights: |S_c| = g·q_c + r_c (0 ≤ r_c < g); the
"−" families' sum K = g·Q + E with 0 ≤ E ≤ Σ r_c, so P(Q ≤ ⌊(m − Σr)/g⌋) ≤ P(K ≤ m) ≤ P(Q ≤ ⌊m/g⌋), both
counted exactly on the coarse lattice; g shrinks (×¼) until the bracket is decided or the hard budget is
spent. A bracket is decided when it lies wholly outside [lo, hi], or holds none of ``thresholds``, or is
narrower than a relative 1e-3 (method "bracket"); else the method is "undecided" and the caller shows "?".

**The band contract.** ``band=(lo, hi)``: every decision the caller takes compares p with thresholds in
[lo, hi] (Holm over P pairs at α: lo = α/P, hi = α). This module applies the factor 10. ``band=None``: every
p is decided exactly as far as the hard budget allows (for tests and one-off calls).

**Methods**: "exact" (a count of sign flips), "saddlepoint" (an approximation, only outside the widened
band), "bracket" (exact bounds low ≤ p ≤ high, p inside), "undecided". No p is 0: a tail below the smallest
normal float is reported as that float.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import special

__all__ = [
    "EXACT_BUDGET",
    "HARD_BUDGET",
    "CELL_BUDGET",
    "TINY",
    "SignFlipP",
    "sign_flip_test",
    "sign_flip_pvalue",
    "subset_count_below",
    "saddlepoint_pvalues",
    "resampled_pvalues",
    "HodgesLehmann",
    "hodges_lehmann",
    "walsh_order_statistic",
    "clustered_mean_interval",
]

#: Element operations (C × m) up to which the exact count is always used (~0.05 s).
EXACT_BUDGET = 30_000_000
#: Element operations the exact count or the brackets may spend on a p near the decision band (~2 s).
HARD_BUDGET = 1_500_000_000
#: Per (resample, pair) cell of :func:`resampled_pvalues`: exact count near the band up to this cost.
CELL_BUDGET = 2_000_000
#: Elements (cells × families) per block of the vectorised saddlepoint (~16 MB per float64 temporary).
_CELL_ELEMENTS = 1 << 21
#: Factor around the decision band inside which an approximation is not trusted.
BAND_FACTOR = 10.0
#: A bracket narrower than this (relative) counts as decided.
BRACKET_RTOL = 1e-3
#: The smallest p ever reported.
TINY = float(np.finfo(float).tiny)
_LOG_TINY = math.log(TINY)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
#: Rescale the running counts every this many weights (counts at most double per weight: 2^400 < 1e121).
_RESCALE_EVERY = 400


class SignFlipP(NamedTuple):
    """p of the family sign-flip null; ``low`` ≤ p ≤ ``high`` (equal to p when "exact", the approximation's
    p when "saddlepoint")."""

    p: float
    method: str
    low: float
    high: float


# ----------------------------------------------------------------------------------------- exact counts
def subset_count_below(weights: np.ndarray, limits: Sequence[int]) -> list[tuple[float, int]]:
    """#{subsets of ``weights`` (non-negative ints) with sum ≤ L} for each L in ``limits``, as (mantissa,
    binary exponent): count = mantissa · 2^exponent (counts reach 2^C, beyond any float).

    One truncated subset-sum recursion up to max(limits): count[j] += count[j − w] for each weight w ≤ the
    limit (heavier ones can never be in such a subset); weights of 0 double every count. Float64 counts,
    rescaled by powers of two (exactly) every few hundred weights; exact integers while below 2^53.
    """
    w = np.asarray(weights, dtype=np.int64)
    top = max(int(x) for x in limits) if len(limits) else -1
    if top < 0:
        return [(0.0, 0) for _ in limits]
    exponent = int((w == 0).sum())
    w = np.sort(w[(w > 0) & (w <= top)])
    count = np.zeros(top + 1)
    count[0] = 1.0
    other = np.zeros_like(count)
    reach = 0  # largest reachable sum so far (within the limit)
    for k, x in enumerate(w.tolist()):
        new_reach = min(top, reach + x)
        # count'[j] = count[j] + count[j − x] for x ≤ j ≤ new_reach (a second buffer: no overlap copy)
        other[: new_reach + 1] = count[: new_reach + 1]
        np.add(count[x : new_reach + 1], count[: new_reach + 1 - x], out=other[x : new_reach + 1])
        count, other = other, count
        reach = new_reach
        if (k + 1) % _RESCALE_EVERY == 0:
            peak = float(count[: reach + 1].max())
            shift = math.frexp(peak)[1]
            count[: reach + 1] = np.ldexp(count[: reach + 1], -shift)
            exponent += shift
    cumulative = np.cumsum(count[: reach + 1])
    out = []
    for limit in limits:
        if limit < 0:
            out.append((0.0, 0))
        else:
            out.append((float(cumulative[min(int(limit), reach)]), exponent))
    return out


def _two_sided(count: tuple[float, int], flips: int) -> float:
    """2 · count / 2^flips, never below :data:`TINY`, never above 1."""
    mantissa, exponent = count
    if mantissa <= 0:
        return 0.0
    log2 = math.log2(mantissa) + exponent + 1 - flips
    if log2 >= 0:
        return 1.0
    return max(TINY, math.ldexp(mantissa, exponent + 1 - flips))


# ------------------------------------------------------------------------------------------ saddlepoint
def _logcosh(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2 * ax)) - math.log(2)


def _sech2(x: np.ndarray) -> np.ndarray:
    e = np.exp(-2 * np.abs(x))
    return 4 * e / (1 + e) ** 2


def _newton(t: np.ndarray, a: np.ndarray, k: np.ndarray, y: np.ndarray) -> None:
    """Solve K'(t) = Σ_c k_c a_c tanh(t a_c) = y in place from below (K' is concave on t ≥ 0: the Newton
    iterates rise monotonically to the root). The rows still iterating are packed together whenever fewer
    than half remain, so late iterations cost only what they touch."""
    todo = np.arange(t.size)
    ak, a2k, tt, yy = k * a, k * a * a, t.copy(), y
    aa = a
    for _ in range(200):
        # one exponential per element: e = exp(−2ta), tanh = (1 − e)/(1 + e), sech² = 4e/(1 + e)²
        e = np.exp(-2 * tt[:, None] * aa)
        inv = 1 / (1 + e)
        first = np.einsum("ij,ij->i", ak, (1 - e) * inv)
        second = np.einsum("ij,ij->i", a2k, 4 * e * inv * inv)
        step = (yy - first) / second
        tt += step
        going = step > 1e-11 * tt  # also stops on NaN
        t[todo] = tt
        if not going.any():
            return
        if going.sum() * 2 < going.size:
            todo, tt, yy = todo[going], tt[going], yy[going]
            aa, ak, a2k = aa[going], ak[going], a2k[going]


def saddlepoint_pvalues(
    absolute: np.ndarray, mult: np.ndarray, observed: np.ndarray, span: np.ndarray | float = 2.0
) -> np.ndarray:
    """Lugannani–Rice two-sided p = 2·P(X ≥ T) of X = Σ_c ε_c a_c (a family of multiplicity k: k flips).

    Parameters
    ----------
    absolute : numpy.ndarray
        (n, F) or (F,) the |S_c| (shared by every cell when 1-D).
    mult : numpy.ndarray
        (n, F) multiplicities (0 leaves a family out).
    observed : numpy.ndarray
        (n,) |T| of each cell (on the lattice of X).
    span : float or (n,)
        Lattice span of X (2·gcd of the |S_c|): the continuity-corrected point is |T| − span/2.

    The saddlepoint t solves K'(t) = Σ k_c a_c tanh(t a_c) = |T| − span/2 by Newton's method from t = 0
    (K' is concave on t ≥ 0, so the iterates rise monotonically to the root). Cells whose corrected point is
    ≤ 0 get p = 1; below w = 1e-3 (p > 0.99) the normal tail of the corrected point stands in for the
    removable singularity of the formula.
    """
    a = np.asarray(absolute, dtype=np.float64)
    k = np.asarray(mult, dtype=np.float64)
    y = np.asarray(observed, dtype=np.float64) - np.asarray(span, dtype=np.float64) / 2
    n = k.shape[0]
    p = np.ones(n)
    top = (k * a).sum(axis=1)
    var = (k * a * a).sum(axis=1)
    live = (y > 0) & (var > 0) & (y < top)
    if not live.any():
        return p
    idx = np.flatnonzero(live)
    aa = np.broadcast_to(a, k.shape)[idx] if a.ndim == 1 else a[idx]
    kk, yy = k[idx], y[idx]
    t = yy / var[idx]  # the first Newton step from t = 0
    _newton(t, aa, kk, yy)
    at = t[:, None] * aa
    kx = (kk * _logcosh(at)).sum(axis=1)
    k2 = (kk * (aa * aa) * _sech2(at)).sum(axis=1)
    w = np.sqrt(np.maximum(0.0, 2 * (t * yy - kx)))
    h = np.broadcast_to(np.asarray(span, dtype=np.float64), (n,))[idx]
    half = t * h / 2
    # log u = log(2 sinh(t h/2)) + ½ log K'' − log h
    log_u = half + np.log1p(-np.exp(-2 * half)) + 0.5 * np.log(k2) - np.log(h)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        mills = 0.5 * special.erfcx(w / math.sqrt(2)) * math.sqrt(2 * math.pi)  # Φ̄(w)/φ(w)
        bracket = mills + np.exp(-log_u) - 1 / w
        log_p = math.log(2) - w * w / 2 - _HALF_LOG_2PI + np.log(bracket)
        out = np.where(np.isfinite(log_p), np.exp(np.maximum(log_p, _LOG_TINY)), TINY)
    small = w < 1e-3
    if small.any():
        out[small] = special.erfc(yy[small] / np.sqrt(2 * var[idx][small]))
    p[idx] = np.clip(out, TINY, 1.0)
    return p


# ------------------------------------------------------------------------------------------- one p-value
def _widened(band: tuple[float, float] | None) -> tuple[float, float]:
    if band is None:
        return 0.0, math.inf
    lo, hi = band
    if not 0 <= lo <= hi:
        raise ValueError(f"band {band!r}: need 0 <= lo <= hi")
    return lo / BAND_FACTOR, hi * BAND_FACTOR


def _decided(low: float, high: float, band: tuple[float, float] | None, thresholds: Sequence[float]) -> bool:
    if band is not None and (high < band[0] or low > band[1]):
        return True
    if high <= low * (1 + BRACKET_RTOL):
        return True
    return bool(thresholds) and not any(low <= x <= high for x in thresholds)


def _bracket(a: np.ndarray, m: int, grain: int) -> tuple[float, float, int]:
    """Exact bounds (low, high) of 2·P(K ≤ m) from weights coarsened by ``grain``, and the cost spent."""
    q, r = a // grain, a % grain
    slack = int(r.sum())
    (lower, upper) = subset_count_below(q, [(m - slack) // grain if m >= slack else -1, m // grain])
    return _two_sided(lower, a.size), _two_sided(upper, a.size), a.size * (m // grain + 1)


def sign_flip_test(
    sums: Sequence[int] | np.ndarray,
    *,
    band: tuple[float, float] | None = None,
    thresholds: Sequence[float] = (),
    budget: int = EXACT_BUDGET,
    hard_budget: int = HARD_BUDGET,
) -> SignFlipP:
    """Two-sided p of T = Σ S_c under the family sign-flip null (module docstring: methods, band contract).

    Parameters
    ----------
    sums : array_like of int
        Per-family sums of doubled signed ranks (zeros are families without a non-zero difference: left out).
    band : (lo, hi), optional
        The caller's decision thresholds lie in [lo, hi]; an approximation is used only below lo/10 or
        above 10·hi. None: exact wherever the hard budget allows.
    thresholds : sequence of float
        The caller's actual thresholds (optional): a bracket holding none of them is decided.
    budget, hard_budget : int
        Element operations of the exact count always spent / spent at most near the band.
    """
    s = np.asarray(sums, dtype=np.int64)
    a = np.abs(s[s != 0])
    if a.size == 0:
        return SignFlipP(math.nan, "exact", math.nan, math.nan)
    t = abs(int(s.sum()))
    if t == 0:
        return SignFlipP(1.0, "exact", 1.0, 1.0)
    m = (int(a.sum()) - t) // 2  # Σ|S| − |T| is even: X and T share the parity of Σ|S|
    cost = a.size * (m + 1)
    if cost <= budget:
        p = _two_sided(subset_count_below(a, [m])[0], a.size)
        return SignFlipP(p, "exact", p, p)
    span = 2.0 * float(np.gcd.reduce(a))
    approx = float(saddlepoint_pvalues(a, np.ones((1, a.size)), np.array([float(t)]), span)[0])
    lo, hi = _widened(band)
    if approx < lo or approx > hi:
        return SignFlipP(approx, "saddlepoint", approx, approx)
    if cost <= hard_budget:
        p = _two_sided(subset_count_below(a, [m])[0], a.size)
        return SignFlipP(p, "exact", p, p)
    # brackets: the coarsest grain first, 4× finer each round, within the hard budget in all
    grain = max(1, math.ceil(cost / max(1, budget)))
    spent, low, high = 0, 0.0, 1.0
    while True:
        if spent + a.size * (m // grain + 1) > hard_budget:
            break
        low, high, used = _bracket(a, m, grain)
        spent += used
        if _decided(low, high, band, thresholds):
            return SignFlipP(min(max(approx, low), high), "bracket", low, high)
        if grain == 1:
            break
        grain = max(1, grain // 4)
    return SignFlipP(min(max(approx, low), high), "undecided", low, high)


def sign_flip_pvalue(
    sums: Sequence[int] | np.ndarray,
    *,
    band: tuple[float, float] | None = None,
    thresholds: Sequence[float] = (),
    budget: int = EXACT_BUDGET,
    hard_budget: int = HARD_BUDGET,
) -> tuple[float, str]:
    """(p, method) of :func:`sign_flip_test` (the bracket's bounds left out)."""
    out = sign_flip_test(sums, band=band, thresholds=thresholds, budget=budget, hard_budget=hard_budget)
    return out.p, out.method


# ------------------------------------------------------------------------------- the bootstrap's p-values
def resampled_pvalues(
    signed: np.ndarray,
    weights: np.ndarray,
    *,
    band: tuple[float, float],
    cell_budget: int = CELL_BUDGET,
) -> np.ndarray:
    """The clustered signed-rank p of every pair in every family resample (the rank intervals' test).

    Parameters
    ----------
    signed : numpy.ndarray
        (F, P) per family and pair the summed signed average ranks (half-integers; 0: the family has no
        non-zero difference in the pair).
    weights : numpy.ndarray
        (R, F) how often each family was drawn in each resample: a family drawn k times counts as k
        independent sign flips (K(t) = Σ_c k_c log cosh(t S_c)).
    band : (lo, hi)
        The decision band, as for :func:`sign_flip_test`.
    cell_budget : int
        Element operations the exact count may spend on one cell near the band.

    Returns
    -------
    numpy.ndarray
        (R, P) two-sided p-values; 1 where the resample's statistic is 0 or no family was drawn.

    A cell is settled in the cheapest way that is on the right side of the band:

    - the Hoeffding bound p ≤ 2·exp(−T²/(2 Σ k_c S_c²)) when it lies below lo/10: **the bound is returned**
      (an upper bound of p, far below every threshold);
    - the Paley–Zygmund bound p ≥ (1 − T²/Σ k_c S_c²)²/3 when it lies above 10·hi: **the bound is
      returned** (a lower bound of p, far above every threshold);
    - else the saddlepoint, and where that lies within a factor of 10 of the band the exact count when it
      costs at most ``cell_budget`` (else the saddlepoint stays: the bootstrap of the rank intervals is
      itself an approximation; the point verdicts of :func:`sign_flip_test` are exact).

    So only the side of every threshold in [lo, hi] is meaningful for the settled cells: use the result
    for decisions (Holm at the band's thresholds), not for display.
    """
    s2 = np.rint(2 * np.asarray(signed, dtype=np.float64))
    w = np.rint(np.asarray(weights, dtype=np.float64)).astype(np.int64)  # float multiplicities accepted
    if s2.ndim != 2 or w.ndim != 2 or w.shape[1] != s2.shape[0]:
        raise ValueError(f"signed {s2.shape} and weights {w.shape} do not match (F, P) and (R, F)")
    wf = w.astype(np.float64)
    stat = np.abs(wf @ s2)
    var = wf @ (s2 * s2)
    lo, hi = _widened(band)
    p = np.ones(stat.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        hoeffding = 2 * np.exp(-(stat * stat) / (2 * var))
    live = (stat > 0) & (var > 0)
    below = live & (hoeffding < lo)
    p[below] = np.maximum(hoeffding[below], TINY)
    # Paley–Zygmund: P(X² ≥ θ·E X²) ≥ (1 − θ)²·(E X²)²/E X⁴ ≥ (1 − θ)²/3 (E X⁴ ≤ 3 (E X²)² for sign
    # flips): a rigorous lower bound that settles the cells far above the band
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = (stat * stat) / var
    floor = np.where(theta < 1, (1 - theta) ** 2 / 3, 0.0)
    above = live & ~below & (floor > hi)
    rest = live & ~below & ~above
    absolute = np.abs(s2).astype(np.int64)
    span = 2.0 * np.gcd.reduce(absolute, axis=0).astype(np.float64)
    rows, cols = np.nonzero(rest)
    chunk = max(1, _CELL_ELEMENTS // max(1, s2.shape[0]))
    sp = np.empty(rows.size)
    for start in range(0, rows.size, chunk):
        r, c = rows[start : start + chunk], cols[start : start + chunk]
        sp[start : start + chunk] = saddlepoint_pvalues(absolute[:, c].T.astype(np.float64), w[r],
                                                        stat[r, c], span[c])
    for k in np.flatnonzero((sp >= lo) & (sp <= hi)):  # near the band: the exact count where cheap
        r, c = rows[k], cols[k]
        fam = np.flatnonzero(absolute[:, c] * w[r])
        expanded = np.repeat(absolute[fam, c], w[r, fam])
        m = (int(expanded.sum()) - int(stat[r, c])) // 2
        if expanded.size * (m + 1) <= cell_budget:
            sp[k] = _two_sided(subset_count_below(expanded, [m])[0], expanded.size)
    p[rows, cols] = sp
    # the cells settled by Paley–Zygmund get the saddlepoint too when it is cheap to add; else the bound
    p[above] = floor[above]
    return p


# ------------------------------------------------------------------------------------ Hodges–Lehmann
class HodgesLehmann(NamedTuple):
    """The Hodges–Lehmann shift (median of the Walsh averages) with its family-clustered interval."""

    estimate: float
    low: float
    high: float
    n: int
    clusters: int


def _upto(x: np.ndarray, pivot: float, strict: bool) -> np.ndarray:
    """Per row i of sorted ``x``, #{j : x_i + x_j ≤ pivot} (< when ``strict``), judged on the float sums
    themselves (a binary search on pivot − x_i, then moved across whole runs of equal values where
    rounding put it on the wrong side)."""
    n = x.size
    j = np.searchsorted(x, pivot - x, side="left" if strict else "right")
    for _ in range(n + 1):
        ahead = x + x[np.minimum(j, n - 1)]
        behind = x + x[np.maximum(j - 1, 0)]
        if strict:
            up, down = (j < n) & (ahead < pivot), (j > 0) & (behind >= pivot)
        else:
            up, down = (j < n) & (ahead <= pivot), (j > 0) & (behind > pivot)
        if not (up.any() or down.any()):
            return j
        j = np.where(up, np.searchsorted(x, x[np.minimum(j, n - 1)], side="right"), j)
        j = np.where(down, np.searchsorted(x, x[np.maximum(j - 1, 0)], side="left"), j)
    return j


def walsh_order_statistic(x: np.ndarray, k: int, *, seed: int = 0) -> float:
    """The k-th smallest (1-based) Walsh sum x_i + x_j (i ≤ j) of sorted ``x``, without forming the n(n+1)/2
    sums: a randomised selection over the rows of the implicit sorted matrix (after Monahan 1984). Each
    round counts the sums at most a pivot drawn among the candidates still in play (one binary search per
    row, O(n log n)); the candidates shrink geometrically (expected O(log n) rounds); the last ≤ 4n are
    sorted. Returns the sum (halve it for the Walsh average)."""
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
            return float(np.sort(x[row_ix] + x[col_ix])[k - below - 1])
        pick = int(rng.integers(alive))
        i = int(np.searchsorted(ends, pick, side="right"))
        pivot = float(x[i] + x[left[i] + pick - (int(ends[i]) - int(sizes[i]))])
        upto = np.clip(_upto(x, pivot, False), left, right)
        at_most = below + int((upto - left).sum())
        if at_most >= k:
            strict = np.clip(_upto(x, pivot, True), left, right)
            if below + int((strict - left).sum()) < k:
                return pivot  # the k-th sum equals the pivot
            right = strict
        else:
            below, left = at_most, upto


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
    from comparna.rna.clustered import _signed_rank_sums

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
        pair = [walsh_order_statistic(x, k, seed=seed) for k in (total // 2, total // 2 + 1)]
        estimate = (pair[0] + pair[1]) / 4
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
    The degrees of freedom are Bell & McCaffrey's Satterthwaite ν = (tr G)² / tr G² of the C × C matrix
    G = diag(a_c² n_c) − v v'/N, a_c = 1/(N √(1 − n_c/N)), v_c = a_c n_c (the working model of independent
    targets): ν ≈ C − 1 for equal families and falls towards 1 as one family dominates — where CR1 with
    t_{C−1} (Liang & Zeger; Cameron & Miller) under-covers badly. At 90 % the interval is that of
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
    a2 = 1 / (n * n * keep)
    trace = float((a2 * sizes).sum() - (a2 * sizes * sizes).sum() / n)
    vv = float((a2 * sizes * sizes).sum())
    frob = float(((a2 * sizes) ** 2).sum() - 2 * (a2 * a2 * sizes**3).sum() / n + (vv / n) ** 2)
    df = trace * trace / frob
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * se
    return mean - half, mean + half
