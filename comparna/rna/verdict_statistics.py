"""Every call of the ranking into the sign-flip core, in one place (SCIENCE.md §5; issue 35).

The verdict engine (:mod:`comparna.rna.target_verdicts`), the per-pair pass (:mod:`comparna.rna.pair_ranks`)
and the rank intervals (:mod:`comparna.rna.rank_intervals`) read the p-values of the clustered signed-rank
test, the family-clustered interval of the mean difference and the Hodges–Lehmann shift only through the
functions here, so that the test behind them is the same everywhere.

- :func:`pair_pvalues`: two-sided p of T = Σ_c S_c of every pair of a ranking under the exact family
  sign-flip null, computed exactly wherever the Holm decision over these pairs depends on it (an
  approximation decides only where it lies more than a factor of 10 from the threshold that decides the
  pair); the method is ``"undecided"`` when not even the hard budget could settle the decision;
- :func:`resampled_pvalues`: the same p for many family-weight vectors at once (the rank-interval
  bootstrap);
- :func:`mean_interval`: the family-clustered interval of the mean difference (the equivalence test reads
  its 90 % form);
- :func:`hodges_lehmann`: the Hodges–Lehmann shift with its family-clustered interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from comparna.rna import signflip
from comparna.rna.statistics import holm_sides

#: The method of a p-value that could not be placed on one side of a threshold (the verdict is then "?").
UNDECIDED = "undecided"


def holm_band(alpha: float, pairs: int) -> tuple[float, float]:
    """The p-values at which a verdict of one of ``pairs`` Holm-adjusted tests can change: [α/P, α]."""
    return (alpha / max(1, pairs), alpha)


def pair_pvalues(sums: Sequence[np.ndarray], *, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                         np.ndarray]:
    """The p of every pair of a ranking (``sums``: each pair's family sums of doubled signed ranks), computed
    only as finely as Holm's decisions over these pairs at ``alpha`` need; (p, method, low, high).

    A first pass gives each pair its exact p where the count is cheap, else the saddlepoint with its
    trusted interval (a factor of 10 either side: :func:`comparna.rna.signflip.first_pass`). Then, while
    some pair's Holm decision is open under these intervals (rejected with every p at its lower bound but
    not with every p at its upper bound, :func:`comparna.rna.statistics.holm_sides`), the open pairs that
    are not exact are refined a level (:func:`comparna.rna.signflip.refine`: the exact count or a bracket,
    within :data:`~comparna.rna.signflip.EXACT_BUDGET`, then within
    :data:`~comparna.rna.signflip.HARD_BUDGET`). A pair whose decision is still open after that is
    "undecided" (its verdict "?"). Only the pairs near the threshold that actually decides them are
    counted, instead of every pair within a factor of 10 of any Holm threshold between α/P and α.
    """
    n = len(sums)
    results = [signflip.first_pass(np.asarray(s, dtype=np.int64)) for s in sums]
    level = np.zeros(n, dtype=np.int64)
    low = np.array([r.low for r in results], dtype=np.float64)
    high = np.array([r.high for r in results], dtype=np.float64)
    exact = np.array([r.method == "exact" for r in results], dtype=bool)
    band_low = alpha / max(1, n)
    while n:
        certain, possible = holm_sides(low, high, alpha)
        undecided = possible & ~certain
        if not undecided.any():
            break
        refinable = ~exact & (level < 2)
        todo = undecided & refinable
        if not todo.any():
            # the open decisions are exact p-values whose Holm step depends on other pairs' intervals: of
            # those, only the intervals reaching into [α/P, α] can move a decision
            todo = refinable & (high >= band_low) & (low <= alpha)
            if not todo.any():
                break
        for k in np.flatnonzero(todo):
            level[k] += 1
            results[k] = signflip.refine(np.asarray(sums[k], dtype=np.int64), level=int(level[k]),
                                         earlier=results[k])
            low[k], high[k] = results[k].low, results[k].high
            exact[k] = results[k].method == "exact"
    p = np.array([r.p for r in results], dtype=np.float64)
    method = np.array([r.method for r in results], dtype=object)
    if n:
        certain, possible = holm_sides(low, high, alpha)
        method[possible & ~certain] = UNDECIDED
        method[(method == UNDECIDED) & ~(possible & ~certain)] = "bracket"
    return p, method, low, high


def resampled_pvalues(signed: np.ndarray, weights: np.ndarray, *, band: tuple[float, float]) -> np.ndarray:
    """(R, P) p-values of T* = Σ_c w_rc S_cp: ``signed`` (F, P) family sums of signed ranks, ``weights``
    (R, F) how often each family is drawn in each resample.

    Cells whose p is certainly above the band are settled here without the sign-flip core: X = Σ ε_i w_i
    (a Rademacher sum, each drawn copy of a family its own sign) has E X⁴ ≤ 3 (E X²)², so by
    Paley–Zygmund P(|X| ≥ z·σ) ≥ (1 − z²)²/3 for |z| < 1. Where that lower bound exceeds the band's top the
    cell can never be significant at any Holm step, and its exact value cannot change a decision (Holm
    never rejects a p above α, and such a p sorts after every rejected one): the bound is returned.
    """
    counts = np.rint(np.asarray(weights)).astype(np.int64)  # draw counts (the bootstrap's float64 blocks)
    s = np.asarray(signed, dtype=np.float64)
    wf = counts.astype(np.float64)
    stat, var = wf @ s, wf @ (s * s)
    with np.errstate(divide="ignore", invalid="ignore"):
        z2 = np.where(var > 0, stat * stat / var, 0.0)
    bound = np.where(z2 < 1, (1 - np.minimum(z2, 1)) ** 2 / 3, 0.0)
    settled = bound > band[1]
    out = np.where(settled, bound, 1.0)
    # the core sees the pairs with an unsettled cell, all at once: Holm runs across the pairs of a resample,
    # and the core counts exactly only the cells whose Holm decision its approximations leave open
    live = np.flatnonzero(~settled.all(axis=0))
    if live.size:
        # (every column live, the common case: no copy of the families × pairs sums)
        core = signflip.resampled_pvalues(s if live.size == s.shape[1] else s[:, live], counts, band=band,
                                          holm_alpha=band[1],
                                          more_tests=int(s.shape[1] - live.size),
                                          trust=signflip.BOOTSTRAP_TRUST)
        out[:, live] = np.where(settled[:, live], out[:, live], core)
    return out


def mean_interval(d: np.ndarray, codes: np.ndarray, *, confidence: float) -> tuple[float, float]:
    """The family-clustered ``confidence`` interval of the mean of ``d`` (codes: each target's family)."""
    low, high = signflip.clustered_mean_interval(d, codes, confidence=confidence)
    return float(low), float(high)


def hodges_lehmann(d: np.ndarray, codes: np.ndarray, *, confidence: float) -> tuple[float, float, float]:
    """The Hodges–Lehmann shift of ``d`` with its family-clustered interval: (estimate, low, high)."""
    result = signflip.hodges_lehmann(d, codes, confidence=confidence)
    return float(result.estimate), float(result.low), float(result.high)
