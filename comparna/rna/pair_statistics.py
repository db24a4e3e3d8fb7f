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
    select_clusters,
)
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.ranking import COUNT_FIELDS, CountsTable
from comparna.rna.statistics import paired_t_test_of, t_pvalues

__all__ = ["PAIR_RESAMPLES", "pairwise_statistics"]

#: Cluster bootstrap resamples per pair in a ranking report (percentile intervals at 5/95 %).
PAIR_RESAMPLES = 2000


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _restricted_mccs(table: CountsTable, codes, draws: np.ndarray):
    """Yield ``(j, mcc)`` for every method j: ``mcc`` (methods, resamples) holds, for every method i, the MCC
    of i's counts pooled over each resample of the clusters (``draws``: resamples × clusters multiplicities)
    restricted to the targets j predicted — i's side of the pair (i, j) in its cluster bootstrap.

    A pooled count is Σ_c w_c · (i's count summed over the cluster's common targets): integers, exact in
    float64, so it can be assembled in any order. Per j one matrix product serves every i: over the clusters
    of the targets j predicted, or — when fewer — the product over all targets minus the one over the
    clusters of the targets j lacks.
    """
    present = table.present
    m, t = present.shape
    # MCC needs FP and ε only as FP − ε: four fields (tp, fn, fp − ε, tn), laid out (targets, methods × 4)
    fields = table.counts[..., [0, 1, 2, 4]].astype(np.float64)
    fields[..., 2] -= table.counts[..., 3]
    fields[~present] = 0.0
    per_target = np.ascontiguousarray(fields.transpose(1, 0, 2).reshape(t, m * 4))
    by_cluster = np.argsort(codes.codes, kind="stable")
    sorted_codes = codes.codes[by_cluster]

    def cluster_sums(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The clusters of the masked targets and per cluster the summed fields (clusters × methods·4)."""
        ix = by_cluster[mask[by_cluster]]
        c = sorted_codes[mask[by_cluster]]
        if ix.size == 0:
            return np.zeros(0, dtype=np.intp), np.zeros((0, m * 4))
        starts = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
        return c[starts], np.add.reduceat(per_target[ix], starts, axis=0)

    everything = None
    for j in range(m):
        inside, outside = np.unique(codes.codes[present[j]]), np.unique(codes.codes[~present[j]])
        if inside.size <= outside.size:
            keys, sums = cluster_sums(present[j])
            pooled = draws[:, keys] @ sums
        else:
            if everything is None:
                all_keys, all_sums = cluster_sums(np.ones(t, dtype=bool))
                everything = draws[:, all_keys] @ all_sums
            keys, sums = cluster_sums(~present[j])
            pooled = everything - draws[:, keys] @ sums
        pooled = pooled.reshape(-1, m, 4)
        tp, fn, fp_net, tn = (pooled[..., f] for f in range(4))
        yield j, mcc_from_arrays(tp, fn, fp_net, 0, tn).T


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
    rank = {i: x for x, i in enumerate(order)}
    counts = table.counts.astype(np.float64)
    per_target_mcc = mcc_from_arrays(*np.moveaxis(counts, -1, 0))  # (methods, targets)
    present = table.present
    n_common = present.astype(np.int64) @ present.T.astype(np.int64)
    # pooled[j, i]: i's counts summed over the targets i and j share (integers: exact in float64)
    masked = np.where(present[..., None], counts, 0.0)
    pooled = (present.astype(np.float64) @ masked.transpose(1, 0, 2).reshape(len(table.targets), -1)).reshape(
        len(names), len(names), len(COUNT_FIELDS)
    )
    pooled_mcc = mcc_from_arrays(*np.moveaxis(pooled, -1, 0))  # pooled_mcc[j, i]: MCC of pooled[j, i]
    draws = None
    if codes is not None and resamples > 0:
        draws = np.concatenate(list(_multiplicities(np.random.default_rng(seed), codes.count, resamples)))
    tail = 100 * (1 - confidence) / 2
    out: dict[str, dict[str, dict]] = {}
    tests = []  # (entry, t-test, clustered t-test): their p-values are computed together below
    for x, i in enumerate(order):
        for j in order[x + 1 :]:
            n = int(n_common[i, j])
            entry: dict = {"n": n}
            if n >= 3:
                common = present[i] & present[j]
                a, b = per_target_mcc[i, common], per_target_mcc[j, common]
                t = paired_t_test_of(a - b, with_p=False)
                ct = cluster_paired_t_test(a, b, select_clusters(codes, common), with_p=False)
                tests.append((entry, t, ct))
            out.setdefault(names[i], {})[names[j]] = entry
    if tests:
        p = t_pvalues([t.statistic for _, t, _ in tests], [t.df for _, t, _ in tests]).tolist()
        # the clustered test of one cluster has no p-value (NaN statistic, df 0)
        cp = t_pvalues([ct.statistic for _, _, ct in tests], [max(ct.df, 1) for _, _, ct in tests]).tolist()
        for (entry, t, ct), pv, cpv in zip(tests, p, cp, strict=True):
            entry["paired"] = {
                "t": _finite(t.statistic), "df": t.df, "pvalue": _finite(pv),
                "mean_difference": t.mean_difference,
                "t_clustered": _finite(ct.statistic), "df_clustered": ct.df,
                "pvalue_clustered": _finite(cpv), "clusters": ct.df + 1,
            }
    if draws is not None:
        # the bootstrap of every pair (i, j), i before j by name: i's side restricted to j's targets (computed
        # at j) minus j's side restricted to i's (computed at i); the earlier side waits in `pending`
        pending: dict[tuple[int, int], np.ndarray] = {}
        for j, mcc in _restricted_mccs(table, codes, draws):
            done, diffs = [], []
            for i in range(len(names)):
                if i == j or n_common[i, j] < 1:
                    continue
                if (j, i) not in pending:
                    pending[i, j] = mcc[i]  # i's side of the pair, restricted to j's targets
                    continue
                other = pending.pop((j, i))  # j's side, restricted to i's targets
                first, second = (i, j) if rank[i] < rank[j] else (j, i)
                side = {i: mcc[i], j: other}
                done.append((first, second))
                diffs.append(side[first] - side[second])
            if not done:
                continue
            # row-wise percentiles: the same partition and interpolation as one pair at a time
            lows, highs = np.percentile(np.array(diffs), [tail, 100 - tail], axis=1)
            for (first, second), low, high in zip(done, lows.tolist(), highs.tolist(), strict=True):
                estimate = float(pooled_mcc[second, first] - pooled_mcc[first, second])
                common = present[first] & present[second]
                out[names[first]][names[second]]["equivalence"] = {
                    "estimate": estimate, "low": low, "high": high,
                    "verdict": equivalence_verdict(low, high, delta),
                    "clusters": int(np.count_nonzero(np.bincount(codes.codes[common]))),
                }
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
