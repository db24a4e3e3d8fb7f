"""Statistics of every method pair of a ranking, beside CompaRNA's verdicts (SCIENCE.md §6; issue 14).

For each pair of methods A < B (by name) on their common targets:

- ``paired``: the paired t statistic of the per-target MCC differences A − B (Xu et al. 2012), target-level
  and cluster-robust (:func:`comparna.rna.clustered.cluster_paired_t_test`), with n and the number of
  clusters — what a later look of a growing dataset needs for its group-sequential verdict;
- ``equivalence``: the difference of pooled MCCs A − B with its cluster bootstrap 90 % interval and the
  verdict "practically equal" / "practically different" / "undetermined" for the margin δ
  (:func:`comparna.rna.clustered.equivalence_verdict`).

One matrix of cluster draws (``resamples`` × clusters, from ``seed``) serves every pair: a pair uses the
draws of the clusters of its common targets, so each pair's interval is an ordinary cluster bootstrap over
its own targets (a drawn cluster contributes its common targets; with no common target it contributes
nothing), and the same inputs give the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from comparna.rna.clustered import (
    EQUIVALENCE_CONFIDENCE,
    EQUIVALENCE_DELTA,
    _multiplicities,
    cluster_codes,
    cluster_paired_t_test,
    equivalence_verdict,
)
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.ranking import COUNT_FIELDS, CountsTable
from comparna.rna.statistics import paired_t_test

__all__ = ["PAIR_RESAMPLES", "pairwise_statistics"]

#: Cluster bootstrap resamples per pair in a ranking report (percentile intervals at 5/95 %).
PAIR_RESAMPLES = 2000


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def pairwise_statistics(
    table: CountsTable,
    clusters: Sequence[str],
    *,
    seed: int,
    resamples: int = PAIR_RESAMPLES,
    delta: float = EQUIVALENCE_DELTA,
    confidence: float = EQUIVALENCE_CONFIDENCE,
) -> dict:
    """Paired t statistics and clustered pooled-MCC equivalence for every pair of methods.

    Parameters
    ----------
    table : CountsTable
        Counts in :data:`comparna.rna.ranking.COUNT_FIELDS` order.
    clusters : sequence of str
        Cluster label of every target of the table (Rfam family, else sequence cluster).

    Returns
    -------
    dict
        ``{"pairs": {A: {B: {...}}}`` for A < B, ``"clusters"``, ``"resamples"``, ``"delta"``,
        ``"confidence"``, ``"seed"``.
    """
    if len(clusters) != len(table.targets):
        raise ValueError("one cluster label per target")
    codes = cluster_codes(list(clusters)) if len(clusters) else None
    names = list(table.methods)
    order = sorted(range(len(names)), key=lambda i: names[i])
    counts = table.counts.astype(np.float64)
    per_target_mcc = mcc_from_arrays(*np.moveaxis(counts, -1, 0))  # (methods, targets)
    draws = None
    if codes is not None and resamples > 0:
        draws = np.concatenate(list(_multiplicities(np.random.default_rng(seed), codes.count, resamples)))
    out: dict[str, dict[str, dict]] = {}
    for x, i in enumerate(order):
        for j in order[x + 1 :]:
            common = table.present[i] & table.present[j]
            n = int(common.sum())
            entry: dict = {"n": n}
            if n >= 3:
                a, b = per_target_mcc[i, common], per_target_mcc[j, common]
                labels = [clusters[k] for k in np.flatnonzero(common)]
                t = paired_t_test(a, b)
                ct = cluster_paired_t_test(a, b, labels)
                entry["paired"] = {
                    "t": _finite(t.statistic), "df": t.df, "pvalue": _finite(t.pvalue),
                    "mean_difference": t.mean_difference,
                    "t_clustered": _finite(ct.statistic), "df_clustered": ct.df,
                    "pvalue_clustered": _finite(ct.pvalue), "clusters": ct.df + 1,
                }
            if n >= 1 and draws is not None:
                pooled_a = counts[i, common].sum(axis=0)
                pooled_b = counts[j, common].sum(axis=0)
                estimate = float(mcc_from_arrays(*pooled_a) - mcc_from_arrays(*pooled_b))
                c = codes.codes[common]
                sums_a = np.stack([np.bincount(c, counts[i, common, f], codes.count)
                                   for f in range(len(COUNT_FIELDS))], axis=1)
                sums_b = np.stack([np.bincount(c, counts[j, common, f], codes.count)
                                   for f in range(len(COUNT_FIELDS))], axis=1)
                diff = mcc_from_arrays(*(draws @ sums_a).T) - mcc_from_arrays(*(draws @ sums_b).T)
                tail = 100 * (1 - confidence) / 2
                low, high = (float(v) for v in np.percentile(diff, [tail, 100 - tail]))
                entry["equivalence"] = {
                    "estimate": estimate, "low": low, "high": high,
                    "verdict": equivalence_verdict(low, high, delta),
                    "clusters": int(np.unique(c).size),
                }
            out.setdefault(names[i], {})[names[j]] = entry
    return {
        "pairs": out,
        "clusters": codes.count if codes is not None else 0,
        "resamples": resamples,
        "delta": delta,
        "confidence": confidence,
        "seed": seed,
        "method": (
            f"pooled MCC difference with a cluster bootstrap {round(confidence * 100)} % percentile interval "
            f"({resamples} resamples of Rfam families / sequence clusters); 'practically equal' when the "
            f"interval lies inside ±{delta:g} (two one-sided tests at {(1 - confidence) / 2:g}); the "
            "CompaRNA verdict stays primary"
        ),
    }
