"""The PPV–sensitivity overview of a subset (CompaRNA 2013's summary plot): one point per method, its mean
per-target sensitivity and PPV with 95 % bootstrap percentile intervals.

Both means are resampled with the same target indices (:func:`comparna.rna.statistics.bootstrap_means` on
the two rows at once), so each interval equals the one :func:`comparna.rna.statistics.bootstrap_ci_mean`
gives for that score alone with the same seed, at the cost of one set of draws.

Pure module: numpy and comparna.rna.statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from comparna.rna.statistics import CONFIDENCE, RESAMPLES, bootstrap_means

__all__ = ["overview_point"]


def overview_point(
    sensitivity: Sequence[float] | np.ndarray,
    ppv: Sequence[float] | np.ndarray,
    *,
    seed: int,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> dict | None:
    """One method's point of the overview: ``{"n", "sensitivity": {"mean", "low", "high"}, "ppv": {...}}``
    from its per-target scores (the same targets, in the same order, for both); None without targets.

    Parameters
    ----------
    sensitivity, ppv : array_like
        Per-target sensitivity TP / (TP + FN) and PPV TP / (TP + FP − ε) (SCIENCE.md §2).
    seed : int
        Seed of the resampling (the snapshot's).
    resamples, confidence
        Bootstrap percentile interval (Efron 1979; Hajiaghayi et al. 2012: 10 000 resamples, 95 %).
    """
    x = np.vstack([np.asarray(sensitivity, dtype=np.float64), np.asarray(ppv, dtype=np.float64)])
    if x.shape[1] == 0:
        return None
    means = bootstrap_means(x, resamples=resamples, seed=seed)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(means, [tail, 100 - tail], axis=1)
    out: dict = {"n": int(x.shape[1])}
    for k, name in enumerate(("sensitivity", "ppv")):
        out[name] = {"mean": float(x[k].mean()), "low": float(low[k]), "high": float(high[k])}
    return out
