"""The exact family sign-flip null of the clustered signed-rank test, the effect sizes beside it (issue 35).

Public names (stable signatures; :mod:`comparna.rna.clustered` re-exports the first two)::

    sign_flip_test(sums, *, band=None, thresholds=(), budget=EXACT_BUDGET, hard_budget=HARD_BUDGET)
        -> SignFlipP(p, method, low, high)
    sign_flip_pvalue(sums, *, band=None, ...) -> (p, method)
    holm_thresholds(alpha, pairs) -> numpy.ndarray (α/k, k = 1 … pairs: the ``thresholds`` of a Holm matrix)
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
band [lo, hi] (p_sp ≥ lo/10 and p_sp ≤ 10·hi) the p is decided exactly: by exact **brackets** from
coarsened weights, |S_c| = g·q_c + r_c (0 ≤ r_c < g), the "−" families' sum K = g·Q + E with
0 ≤ E ≤ Σ r_c, so P(Q ≤ ⌊(m − Σr)/g⌋) ≤ P(K ≤ m) ≤ P(Q ≤ ⌊m/g⌋), both counted exactly on the coarse
lattice (tightened by a Hoeffding bound on E, :func:`_bracket`) — a cheap bracket first (cost ≤
``budget``); then the full count if C·m ≤ ``hard_budget``; else the finest bracket the rest of the hard
budget affords. A bracket is decided when it lies wholly outside [lo, hi], or holds none of
``thresholds``, or is narrower than a relative 1e-3 (method "bracket"); else the method is "undecided"
and the caller shows "?".

**The band contract.** ``band=(lo, hi)``: every decision the caller takes compares p with thresholds in
[lo, hi] (Holm over P pairs at α: lo = α/P, hi = α). This module applies the factor 10. Passing the
thresholds themselves (``thresholds=holm_thresholds(α, P)``) lets a bracket that holds none of them decide.
``band=None``: every p is decided exactly as far as the hard budget allows (tests and one-off calls).

**Methods**: "exact" (a count of sign flips), "saddlepoint" (an approximation, only outside the widened
band), "bracket" (exact bounds low ≤ p ≤ high, p inside), "undecided". No p is 0: a tail below the smallest
normal float is reported as that float.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from comparna.rna.effect_sizes import (
    HodgesLehmann,
    clustered_mean_interval,
    hodges_lehmann,
    walsh_order_statistic,
)
from comparna.rna.saddlepoint import TINY, saddlepoint_pvalues, series_saddlepoint_pvalues
from comparna.rna.statistics import holm_sides

__all__ = [
    "EXACT_BUDGET",
    "HARD_BUDGET",
    "CELL_BUDGET",
    "TINY",
    "SignFlipP",
    "sign_flip_test",
    "sign_flip_pvalue",
    "first_pass",
    "refine",
    "holm_thresholds",
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
#: Element operations of the exact count in a ranking's first pass over its pairs (~3 ms, :func:`first_pass`).
FIRST_BUDGET = 2_000_000
#: Element operations the exact count or the brackets may spend on a p near the decision band (~2 s).
HARD_BUDGET = 1_500_000_000
#: Per (resample, pair) cell of :func:`resampled_pvalues`: exact count near the band up to this cost.
CELL_BUDGET = 2_000_000
#: Factor around the decision band inside which an approximation is not trusted.
BAND_FACTOR = 10.0
#: The rank-interval bootstrap (a Monte Carlo estimate itself) counts a cell exactly when its Holm decision
#: is open within this factor of the saddlepoint, not 10: the saddlepoint stays within a few per cent of the
#: exact p in the tail (tests/unit/test_signflip.py), and at 100 methods a factor of 10 left ~600 cells of
#: every resample open (550 000 counts, 150 s for one 400-target subset).
BOOTSTRAP_TRUST = 1.25
#: A bracket narrower than this (relative) counts as decided.
BRACKET_RTOL = 1e-3
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
    if len(thresholds) == 0:
        return False
    grid = np.sort(np.asarray(thresholds, dtype=np.float64))
    at = int(np.searchsorted(grid, low, side="left"))
    return not (at < grid.size and grid[at] <= high)  # no threshold inside [low, high]


def holm_thresholds(alpha: float, pairs: int) -> np.ndarray:
    """Every threshold Holm's step-down procedure over ``pairs`` tests at ``alpha`` compares a p with:
    α/k, k = 1 … pairs (pass as ``thresholds`` so that a bracket between two of them decides)."""
    return alpha / np.arange(1, max(1, pairs) + 1, dtype=np.float64)


def _dp_cost(a: np.ndarray, limit: int) -> int:
    """Element operations of :func:`subset_count_below` of ``a`` up to ``limit``: each weight ≤ the limit
    touches min(limit, reach so far) + 1 counts."""
    w = np.sort(a[(a > 0) & (a <= limit)])
    return int(np.minimum(np.cumsum(w), limit).sum()) + int(w.size) + int(a.size)


def _finest_grain(a: np.ndarray, m: int, allowance: int) -> int | None:
    """The smallest grain g whose coarsened count costs at most ``allowance`` (bisection on g: the cost
    falls as g grows), or None if not even the coarsest affords it."""
    if allowance <= 0:
        return None
    top = max(1, m)
    if _dp_cost(a // top, m // top) > allowance:
        return None
    low, high = 1, top  # cost(high) fits
    while low < high:
        mid = (low + high) // 2
        if _dp_cost(a // mid, m // mid) <= allowance:
            high = mid
        else:
            low = mid + 1
    return high


def _bracket(a: np.ndarray, m: int, grain: int, guess: float) -> tuple[float, float, int]:
    """Exact bounds (low, high) of p = 2·P(K ≤ m) from weights coarsened by ``grain``, and the cost spent.

    K = g·Q + E, E = Σ_{c flipped} r_c ∈ [0, Σr]: worst case P(Q ≤ ⌊(m − Σr)/g⌋) ≤ P(K ≤ m) ≤
    P(Q ≤ ⌊m/g⌋). Tighter, by a union bound with Hoeffding's inequality for E (independent terms in
    [0, r_c]; P(|E − Σr/2| ≥ u) one-sided ≤ ε = exp(−2u²/Σr²)): P(Q ≤ ⌊(m − Σr/2 − u)/g⌋) − ε ≤ P(K ≤ m)
    ≤ P(Q ≤ ⌊(m − Σr/2 + u)/g⌋) + ε, ε chosen as 1e-3 of the ``guess`` of P. Both hold; the bracket is
    their intersection, all four from one count.
    """
    q, r = a // grain, a % grain
    slack, spread = int(r.sum()), float((r.astype(np.float64) ** 2).sum())
    eps = max(1e-300, 5e-4 * guess)
    u = math.sqrt(spread * math.log(1 / eps) / 2)
    centre = m - slack / 2
    limits = [(m - slack) // grain if m >= slack else -1, m // grain,
              math.floor((centre - u) / grain) if centre >= u else -1,
              min(m // grain, math.floor((centre + u) / grain))]
    wc_low, wc_high, h_low, h_high = (_two_sided(c, a.size) for c in subset_count_below(q, limits))
    low = max(wc_low, h_low - 2 * eps)
    high = min(wc_high, h_high + 2 * eps)
    return low, max(low, high), _dp_cost(q, m // grain)


def _prepare(sums, budget: int) -> SignFlipP | tuple[np.ndarray, int, int, int, float]:
    """The answer when it is immediate (no non-zero family, T = 0, or the exact count costs at most
    ``budget``), else (|S_c|, |T|, m, the count's cost, the saddlepoint p)."""
    s = np.asarray(sums, dtype=np.int64)
    a = np.abs(s[s != 0])
    if a.size == 0:
        return SignFlipP(math.nan, "exact", math.nan, math.nan)
    t = abs(int(s.sum()))
    if t == 0:
        return SignFlipP(1.0, "exact", 1.0, 1.0)
    m = (int(a.sum()) - t) // 2  # Σ|S| − |T| is even: X and T share the parity of Σ|S|
    cost = _dp_cost(a, m)
    if cost <= budget:
        p = _two_sided(subset_count_below(a, [m])[0], a.size)
        return SignFlipP(p, "exact", p, p)
    span = 2.0 * float(np.gcd.reduce(a))
    approx = float(saddlepoint_pvalues(a, np.ones((1, a.size)), np.array([float(t)]), span)[0])
    return a, t, m, cost, approx


def first_pass(sums: Sequence[int] | np.ndarray, *, budget: int = FIRST_BUDGET) -> SignFlipP:
    """The first, cheap p of a pair of a ranking: exact when the count costs at most ``budget``, else the
    saddlepoint with the interval it is trusted to (``low``, ``high``) = (p/10, 10·p) (:data:`BAND_FACTOR`).

    The ranking then refines (:func:`refine`) only the pairs whose Holm decision those intervals leave open
    (:func:`comparna.rna.verdict_statistics.pair_pvalues`), so that no verdict depends on an approximation
    within a factor of 10 of the threshold that decides it."""
    prepared = _prepare(sums, budget)
    if isinstance(prepared, SignFlipP):
        return prepared
    approx = prepared[4]
    return SignFlipP(approx, "saddlepoint", approx / BAND_FACTOR, min(1.0, approx * BAND_FACTOR))


def refine(sums: Sequence[int] | np.ndarray, *, level: int, earlier: SignFlipP) -> SignFlipP:
    """A tighter p of a pair whose decision ``earlier`` left open: level 1 spends at most
    :data:`EXACT_BUDGET` (the exact count, else the cheap bracket), level 2 at most :data:`HARD_BUDGET`
    (the exact count, else the finest bracket it affords). Exact bounds are kept as they are; a bracket
    that is wider than the approximation's trusted interval on a side is narrowed to it on that side
    (the approximation is trusted to a factor of 10 everywhere; within it, only exact bounds decide)."""
    hard = EXACT_BUDGET if level == 1 else HARD_BUDGET
    out = sign_flip_test(sums, band=None, budget=min(EXACT_BUDGET, hard), hard_budget=hard)
    if out.method == "exact" or earlier.method == "exact":
        return out if out.method == "exact" else earlier
    low, high = max(out.low, earlier.low), min(out.high, earlier.high)
    if low > high:  # cannot happen when the approximation holds its factor of 10: trust the exact bounds
        low, high = out.low, out.high
    method = "bracket" if high <= low * (1 + BRACKET_RTOL) else "undecided"
    return SignFlipP(min(max(out.p, low), high), method, low, high)


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
    prepared = _prepare(sums, budget)
    if isinstance(prepared, SignFlipP):
        return prepared
    a, t, m, cost, approx = prepared
    lo, hi = _widened(band)
    if approx < lo or approx > hi:
        return SignFlipP(approx, "saddlepoint", approx, approx)
    # near the band: a cheap bracket (cost ≤ budget) first, which decides whenever no threshold is close;
    # then the exact count if the hard budget affords it; else the finest bracket the rest affords
    low, high, spent = 0.0, 1.0, 0
    grain = _finest_grain(a, m, budget)
    if grain is not None and grain > 1:
        low, high, spent = _bracket(a, m, grain, approx)
        if _decided(low, high, band, thresholds):
            return SignFlipP(min(max(approx, low), high), "bracket", low, high)
    if spent + cost <= hard_budget:
        p = _two_sided(subset_count_below(a, [m])[0], a.size)
        return SignFlipP(p, "exact", p, p)
    grain = _finest_grain(a, m, hard_budget - spent)
    if grain is not None:
        # both brackets hold p: keep the tighter side of each (the rest of the budget may afford less)
        second_low, second_high, _ = _bracket(a, m, grain, approx)
        low, high = max(low, second_low), min(high, second_high)
        if _decided(low, high, band, thresholds):
            return SignFlipP(min(max(approx, low), high), "bracket", low, high)
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
    holm_alpha: float | None = None,
    more_tests: int = 0,
    trust: float = BAND_FACTOR,
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
    holm_alpha : float, optional
        The columns are one family of tests, decided by Holm at this α in each row: then only the cells
        near the band whose Holm decision the bounds and approximations leave open (each approximation
        trusted to a factor of 10) are counted; without it every cell near the band is.
    more_tests : int
        Further tests in each row's Holm family, not passed here because their p lies above the band in
        every row (they count in Holm's number of tests only).
    trust : float
        With ``holm_alpha``: the factor either side of an approximation within which its Holm decision
        counts as open (10, as for the point verdicts; the rank intervals pass
        :data:`BOOTSTRAP_TRUST`).

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
    # (families × pairs arrays reach ~100 MB at full size: built in place, one temporary at a time)
    s2 = np.multiply(np.asarray(signed, dtype=np.float64), 2.0)
    np.rint(s2, out=s2)
    w = np.rint(np.asarray(weights, dtype=np.float64)).astype(np.int64)  # float multiplicities accepted
    if s2.ndim != 2 or w.ndim != 2 or w.shape[1] != s2.shape[0]:
        raise ValueError(f"signed {s2.shape} and weights {w.shape} do not match (F, P) and (R, F)")
    wf = w.astype(np.float64)
    stat = np.abs(wf @ s2)
    np.abs(s2, out=s2)
    absolute = s2.astype(np.int64)
    np.square(s2, out=s2)
    var = wf @ s2
    del s2
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
    span = 2.0 * np.gcd.reduce(absolute, axis=0).astype(np.float64)
    rows, cols = np.nonzero(rest)
    sp = series_saddlepoint_pvalues(absolute, w, rows, cols, stat[rows, cols], span, settle_below=lo)
    near = np.flatnonzero((sp >= lo) & (sp <= hi))
    if near.size and holm_alpha is not None:
        # count only the cells whose Holm decision in their resample the approximations leave open: every
        # p in [lower, upper] (a bound's own side is open-ended; an approximation's factor of 10 either side)
        lower, upper = p.copy(), p.copy()
        lower[below], upper[above] = 0.0, 1.0
        lower[above], upper[below] = floor[above], p[below]
        lower[rows, cols] = sp / trust
        upper[rows, cols] = np.minimum(1.0, sp * trust)
        if more_tests:
            pad = np.ones((lower.shape[0], more_tests))
            lower, upper = np.hstack([lower, pad]), np.hstack([upper, pad])
        certain, possible = holm_sides(lower, upper, holm_alpha)
        certain, possible = certain[:, : p.shape[1]], possible[:, : p.shape[1]]
        open_cells = possible & ~certain
        near = near[open_cells[rows[near], cols[near]]]
    if near.size and cell_budget > 0:  # near the band: the exact count where cheap (cost C·m, vectorised)
        used = np.unique(cols[near])
        top = (wf @ absolute[:, used].astype(np.float64))
        flips = wf @ (absolute[:, used] > 0).astype(np.float64)
        at = np.searchsorted(used, cols[near])
        m = (top[rows[near], at] - stat[rows[near], cols[near]]) / 2
        cheap = near[flips[rows[near], at] * (m + 1) <= cell_budget]
        for k in cheap.tolist():
            r, c = rows[k], cols[k]
            fam = np.flatnonzero(absolute[:, c] * w[r])
            expanded = np.repeat(absolute[fam, c], w[r, fam])
            count = subset_count_below(expanded, [(int(expanded.sum()) - int(stat[r, c])) // 2])[0]
            sp[k] = _two_sided(count, expanded.size)
    p[rows, cols] = sp
    p[above] = floor[above]
    return p
