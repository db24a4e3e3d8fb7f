"""Every call of the ranking into the sign-flip core, in one place (SCIENCE.md §5; issue 35).

The verdict engine (:mod:`comparna.rna.target_verdicts`), the per-pair pass (:mod:`comparna.rna.pair_ranks`)
and the rank intervals (:mod:`comparna.rna.rank_intervals`) read the p-values of the clustered signed-rank
test, the family-clustered interval of the mean difference and the Hodges–Lehmann shift only through the
functions here, so that the test behind them is the same everywhere.

- :func:`pair_pvalue`: two-sided p of T = Σ_c S_c under the exact family sign-flip null, computed exactly
  wherever the verdict depends on it (the ``band`` of decision thresholds: Holm's thresholds run from α/P
  at its first step to α at its last); the method is ``"undecided"`` when not even that could place p on
  one side of every threshold;
- :func:`resampled_pvalues`: the same p for many family-weight vectors at once (the rank-interval
  bootstrap);
- :func:`mean_interval`: the family-clustered interval of the mean difference (the equivalence test reads
  its 90 % form);
- :func:`hodges_lehmann`: the Hodges–Lehmann shift with its family-clustered interval.
"""

from __future__ import annotations

import numpy as np

from comparna.rna import signflip

#: The method of a p-value that could not be placed on one side of a threshold (the verdict is then "?").
UNDECIDED = "undecided"


def holm_band(alpha: float, pairs: int) -> tuple[float, float]:
    """The p-values at which a verdict of one of ``pairs`` Holm-adjusted tests can change: [α/P, α]."""
    return (alpha / max(1, pairs), alpha)


def pair_pvalue(sums: np.ndarray, *, band: tuple[float, float]) -> tuple[float, str]:
    """Two-sided sign-flip p of the family sums of doubled signed ranks ``sums`` (integers), and how."""
    p, method = signflip.sign_flip_pvalue(np.asarray(sums, dtype=np.int64), band=band)
    return float(p), str(method)


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
    # the core sees only the unsettled cells: pair by pair, the resamples where that pair is unsettled
    for k in np.flatnonzero(~settled.all(axis=0)):
        rows = np.flatnonzero(~settled[:, k])
        core = signflip.resampled_pvalues(s[:, k : k + 1], counts[rows], band=band)
        out[rows, k] = np.asarray(core, dtype=np.float64)[:, 0]
    return out


def mean_interval(d: np.ndarray, codes: np.ndarray, *, confidence: float) -> tuple[float, float]:
    """The family-clustered ``confidence`` interval of the mean of ``d`` (codes: each target's family)."""
    low, high = signflip.clustered_mean_interval(d, codes, confidence=confidence)
    return float(low), float(high)


def hodges_lehmann(d: np.ndarray, codes: np.ndarray, *, confidence: float) -> tuple[float, float, float]:
    """The Hodges–Lehmann shift of ``d`` with its family-clustered interval: (estimate, low, high)."""
    result = signflip.hodges_lehmann(d, codes, confidence=confidence)
    return float(result.estimate), float(result.low), float(result.high)
