"""The PPV–sensitivity overview of a subset (CompaRNA 2013's summary plot): one point per method, its mean
per-target sensitivity and PPV with 95 % bootstrap percentile intervals.

Both means are resampled with the same target indices, drawn once (:func:`comparna.rna.statistics.
resample_indices` in the blocks :func:`comparna.rna.statistics.bootstrap_means` uses), so each interval equals
the one :func:`comparna.rna.statistics.bootstrap_ci_mean` gives for that score alone with the same seed, at
about 1.5 times the cost of one (drawing the indices is most of it; measured at 20 000 targets).

Pure module: numpy and comparna.rna.statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from comparna.rna.statistics import _BLOCK_ELEMENTS, CONFIDENCE, RESAMPLES, resample_indices

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
    scores = {
        "sensitivity": np.asarray(sensitivity, dtype=np.float64),
        "ppv": np.asarray(ppv, dtype=np.float64),
    }
    n = scores["sensitivity"].size
    if n == 0:
        return None
    if scores["ppv"].size != n:
        raise ValueError("sensitivity and PPV must be given for the same targets")
    # the draws and blocks of bootstrap_means (so the same rows for the same seed), each row used for both
    rng = np.random.default_rng(seed)
    blocks: dict[str, list[np.ndarray]] = {name: [] for name in scores}
    for idx in resample_indices(rng, n, resamples, chunk=max(1, _BLOCK_ELEMENTS // n)):
        for name, x in scores.items():
            blocks[name].append(x[idx].mean(axis=-1))
    tail = 100 * (1 - confidence) / 2
    out: dict = {"n": int(n)}
    for name, x in scores.items():
        low, high = np.percentile(np.concatenate(blocks[name]), [tail, 100 - tail])
        out[name] = {"mean": float(x.mean()), "low": float(low), "high": float(high)}
    return out
