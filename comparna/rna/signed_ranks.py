"""Family sums of signed ranks: the statistic of the clustered Wilcoxon signed-rank test (Rosner, Glynn & Lee
2003/2006), shared by the test (:mod:`comparna.rna.clustered`) and the effect sizes beside it
(:mod:`comparna.rna.effect_sizes`)."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

__all__ = ["ZERO_TOLERANCE", "_signed_rank_sums"]

#: Differences closer to 0 than this are zero (dropped, as in Wilcoxon 1945); |d| is rounded to 12 decimals
#: before ranking so that float noise of equal per-target MCCs cannot split a tie.
ZERO_TOLERANCE = 1e-12


def _signed_rank_sums(d: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Per-cluster sums of doubled signed ranks (integers) of the non-zero differences, and their count."""
    keep = np.abs(d) > ZERO_TOLERANCE
    dz, cz = d[keep], codes[keep]
    if dz.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    ranks2 = np.rint(2 * sps.rankdata(np.round(np.abs(dz), 12))).astype(np.int64)  # average ranks × 2
    signed = np.where(dz > 0, ranks2, -ranks2)
    _, local = np.unique(cz, return_inverse=True)
    sums = np.bincount(local, weights=signed.astype(np.float64))
    return np.rint(sums).astype(np.int64), int(dz.size)


def _convolution_pvalue(weights: np.ndarray, observed: int) -> float:
    """P(|Σ ±w_c| ≥ observed) from the distribution of the sum of a random subset of the weights."""
    total = int(weights.sum())
    pmf = np.ones(1)
    for w in np.sort(weights):
        nxt = np.zeros(pmf.size + int(w))
        nxt[: pmf.size] += 0.5 * pmf
        nxt[int(w) :] += 0.5 * pmf
        pmf = nxt
    values = 2 * np.arange(total + 1) - total
    return float(min(1.0, pmf[np.abs(values) >= observed].sum()))


def _enumerated_pvalue(weights: np.ndarray, observed: int) -> float:
    """P(|Σ ±w_c| ≥ observed) over all 2^C sign vectors, enumerated in blocks (exact integer arithmetic).

    The 2^16 sums of signs on the first 16 weights are built by doubling (each weight splits every sum in
    ±w), then each sign vector of the other weights (at most 2^4) offsets them all.
    """
    c = weights.size
    low = min(c, 16)
    low_sums = np.zeros(1, dtype=np.int64)
    for w in weights[:low].tolist():
        low_sums = np.concatenate((low_sums - w, low_sums + w))
    high = c - low
    hits = 0
    for prefix in range(2**high):
        signs = np.array([1 if (prefix >> k) & 1 else -1 for k in range(high)], dtype=np.int64)
        offset = int(signs @ weights[low:]) if high else 0
        hits += int((np.abs(low_sums + offset) >= observed).sum())
    return min(1.0, hits / 2**c)
