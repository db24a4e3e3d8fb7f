"""The primary verdict: target-level clustered signed-rank verdicts of every pair of methods (SCIENCE.md §5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import ndtr

from comparna.rna import thresholds
from comparna.rna.counts_table import ALPHA, DRAW, LOSS, MIN_COMMON, UNKNOWN, WIN, CountsTable
from comparna.rna.pair_ranks import PairSignedRanks, _codes, pair_signed_ranks, per_target_mcc
from comparna.rna.ranking_result import PairwiseRanking, pairwise_result
from comparna.rna.statistics import holm_adjust


def target_conventions(
    *,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    margin: float = thresholds.VERDICT_MARGIN,
    power: float = thresholds.VERDICT_POWER,
) -> dict:
    """The conventions of :func:`target_level_ranking`, stored with every result."""
    return {
        "protocol": thresholds.PROTOCOL_TARGET_LABEL,
        "min_common_targets": min_common,
        "test": "paired Wilcoxon signed-rank on per-target MCC differences, respecting families: sign-flip "
        "permutation test of family-summed signed ranks (clustered signed-rank test of Rosner, Glynn & Lee, "
        "Biometrics 2003/2006); zero differences dropped, average ranks for ties; exact null distribution "
        "(all 2^C family sign flips: enumerated up to 20 families, else by convolution while clusters x "
        "support <= 4e6), else its normal form (Var T = sum S_c^2)",
        "adjustment": "Holm (1979) across every tested pair of the subset",
        "alpha": alpha,
        "winner": "higher mean per-target MCC (when it agrees with the sign of the signed-rank statistic)",
        "draw": f"not significant and power >= {power:g} to detect a mean MCC difference of {margin:g} at "
        f"alpha {alpha:g} (normal approximation with the family-robust (CR1) standard error)",
        "unknown": f"fewer than {min_common} common targets, or not significant and under-powered",
        "margin": margin,
        "power": power,
        "rank": "competition ranking by wins (1, 1, 3)",
        "score": "per-target MCC with compatible FPs neutral (SCIENCE.md §2)",
        "clusters": "the dataset's declared family, else the Rfam assignment, else the target alone",
    }


def detection_power(se: float, *, margin: float, alpha: float) -> float:
    """Power of the two-sided test at ``alpha`` to detect a mean difference ``margin`` when the mean's
    standard error is ``se`` (normal approximation, as :func:`comparna.rna.statistics.posterior_power`).

    A zero standard error (every difference equal) gives power 1; NaN (one family) gives 0.
    """
    from scipy.special import ndtri

    if not np.isfinite(se):
        return 0.0
    if se == 0:
        return 1.0
    shift = abs(margin) / se
    z = ndtri(1 - alpha / 2)
    return float(ndtr(shift - z) + ndtr(-shift - z))

def target_level_ranking(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    margin: float = thresholds.VERDICT_MARGIN,
    power: float = thresholds.VERDICT_POWER,
    pair_data: PairSignedRanks | None = None,
) -> PairwiseRanking:
    """Compare every pair of methods at the target level and rank them by wins (the primary verdict).

    Parameters
    ----------
    table : CountsTable
        Counts of one dataset subset under one pair definition.
    clusters : sequence of str, optional
        The family of every target of the table (None: every target its own family).
    seed : int
        Recorded with the result (the verdicts themselves use no random numbers).
    alpha, min_common, margin, power
        0.001, 10, 0.05 MCC and 0.8 (:mod:`comparna.rna.thresholds`).
    pair_data : PairSignedRanks, optional
        :func:`pair_signed_ranks` of the same table, clusters and ``min_common`` (computed when not given;
        :func:`ranking_report` shares it with :func:`rank_intervals`).

    Returns
    -------
    PairwiseRanking
        ``p_values`` are the unadjusted clustered signed-rank p-values, ``p_adjusted`` Holm's,
        ``mean_difference`` the mean per-target MCC difference over the pair's common targets.
    """
    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    p_values = np.full((m, m), np.nan)
    mean_difference = np.full((m, m), np.nan)
    pair_power = np.full((m, m), np.nan)
    n_clusters = np.zeros((m, m), dtype=np.int64)
    statistic = np.zeros((m, m))
    verdicts = np.full((m, m), UNKNOWN, dtype="<U1")
    reasons = np.full((m, m), "few", dtype="<U5")
    np.fill_diagonal(verdicts, "")
    np.fill_diagonal(reasons, "")
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if pair_data is None:
        pair_data = pair_signed_ranks(table, codes, pairs)
    elif pair_data.pairs != pairs:
        raise ValueError("pair_data was computed for other pairs")
    for k, (a, b) in enumerate(pairs):
        p_values[a, b] = p_values[b, a] = pair_data.pvalue[k]
        diff = pair_data.mean[k]
        mean_difference[a, b], mean_difference[b, a] = diff, -diff
        stat = pair_data.statistic[k]
        statistic[a, b], statistic[b, a] = stat, -stat
        n_clusters[a, b] = n_clusters[b, a] = pair_data.clusters[k]
        se = pair_data.se[k]
        pw = 1.0 if not pair_data.nonzero[k] else detection_power(se, margin=margin, alpha=alpha)
        pair_power[a, b] = pair_power[b, a] = pw
    p_adjusted = np.full((m, m), np.nan)
    if pairs:
        pa, pb = np.array(pairs).T
        adjusted = holm_adjust(p_values[pa, pb])
        p_adjusted[pa, pb] = p_adjusted[pb, pa] = adjusted
        for (a, b), q in zip(pairs, adjusted, strict=True):
            diff, stat = mean_difference[a, b], statistic[a, b]
            if np.isfinite(q) and q < alpha and diff != 0 and np.sign(diff) == np.sign(stat):
                verdicts[a, b], verdicts[b, a] = (WIN, LOSS) if diff > 0 else (LOSS, WIN)
                reasons[a, b] = reasons[b, a] = ""
            elif pair_power[a, b] >= power:
                verdicts[a, b] = verdicts[b, a] = DRAW
                reasons[a, b] = reasons[b, a] = ""
            else:
                reasons[a, b] = reasons[b, a] = "power"
    return pairwise_result(
        table, verdicts, common=common, p_values=p_values, mean_difference=mean_difference, seed=seed,
        conventions=target_conventions(alpha=alpha, min_common=min_common, margin=margin, power=power),
        p_adjusted=p_adjusted,
        power=pair_power,
        reasons=reasons,
        clusters=n_clusters,
    )

def decided_scores(table: CountsTable, result: PairwiseRanking) -> list[dict]:
    """Per method, the mean per-target MCC over exactly the targets that decided its place: the union of
    its pairwise sets with a determined verdict (win, loss or draw), with their number (``None`` when it has
    no determined verdict)."""
    scores = per_target_mcc(table)
    out = []
    for i in range(len(table.methods)):
        decided = np.isin(result.verdicts[i], (WIN, LOSS, DRAW))
        decided[i] = False
        targets = table.present[i] & table.present[decided].any(axis=0) if decided.any() else None
        if targets is None or not targets.any():
            out.append({"decided_mcc": None, "decided_targets": 0})
        else:
            out.append(
                {"decided_mcc": float(scores[i, targets].mean()), "decided_targets": int(targets.sum())}
            )
    return out
