"""The within-these-families view of a subset whose families cannot decide anything (SCIENCE.md §5, issue 35).

When the subset floor fires (P·2/2^C ≥ α: ArchiveII's 9 families) no family-level verdict is possible, and
the ranking says so. What the data can still say is conditional on the families at hand: *for RNAs of these
C families*, is A better than B? That question treats the families as fixed strata, not as a sample of the
families RNAs come in, so its answer **does not generalise to other families** and is never mixed with the
family-level verdicts (the report keeps it under its own key, with that label).

Per pair A, B with at least ``min_common`` common targets, the estimate is the target-weighted mean of the
per-target MCC differences d = A − B, d̄ = Σ_f n_f d̄_f / N (family strata f, n_f common targets in f). Its
variance comes from the sequence sub-clusters within each stratum: the import's redundancy step keeps one
target per cluster of ≥ 90 % identity, so each target is its own sub-cluster and the stratified variance is
Var d̄ = Σ_f (n_f/N)² s_f²/n_f (s_f² the within-family sample variance; a family with one target takes the
pooled within-family variance), with Σ_f (n_f − 1) degrees of freedom (Cochran 1977, §5.3). The two-sided
t-test of d̄ = 0 is Holm-adjusted across the pairs: adjusted p < α → the better mean wins; "=" when the 90 %
interval lies inside ±δ; otherwise "?".
"""

from __future__ import annotations

import numpy as np
from scipy.special import stdtr, stdtrit

from comparna.rna import thresholds
from comparna.rna.counts_table import ALPHA, DRAW, LOSS, MIN_COMMON, UNKNOWN, WIN, CountsTable
from comparna.rna.statistics import holm_adjust

#: What every conditional figure is labelled with ({families}: their number).
LABEL = "for RNAs of these {families} families; does not generalise to other families"
SUBCLUSTERS = (
    "each target is its own sequence sub-cluster within its family (the import keeps one target per cluster "
    "of >= 90 % identity)"
)


def stratified_mean_test(d: np.ndarray, strata: np.ndarray) -> tuple[float, float, int]:
    """(mean, standard error, degrees of freedom) of the target-weighted mean of ``d`` with family strata.

    The standard error is NaN when no stratum has two targets (no within-family variance to estimate).
    """
    d = np.asarray(d, dtype=np.float64)
    _, local = np.unique(np.asarray(strata), return_inverse=True)
    k = int(local.max()) + 1 if local.size else 0
    n = np.bincount(local, minlength=k).astype(np.float64)
    total = float(d.size)
    mean = float(d.mean()) if d.size else float("nan")
    sums = np.bincount(local, weights=d, minlength=k)
    squares = np.bincount(local, weights=d * d, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(n > 1, (squares - sums * sums / n) / (n - 1), np.nan)
    df = int((n - 1).sum())
    if df <= 0:
        return mean, float("nan"), 0
    pooled = float(np.nansum(np.where(n > 1, within * (n - 1), 0.0)) / df)
    variance = np.where(n > 1, np.maximum(within, 0.0), pooled)
    se = float(np.sqrt(np.sum((n / total) ** 2 * variance / n)))
    return mean, se, df


def within_families(
    table: CountsTable,
    scores: np.ndarray,
    codes: np.ndarray,
    *,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    delta: float = thresholds.EQUIVALENCE_DELTA,
    confidence: float = thresholds.EQUIVALENCE_CONFIDENCE,
) -> dict:
    """The conditional verdicts of every pair (module docstring), JSON-ready.

    Parameters
    ----------
    scores : numpy.ndarray
        (methods, targets) per-target MCC (:func:`comparna.rna.pair_ranks.per_target_mcc`).
    codes : numpy.ndarray
        The family of every target (the strata).

    Returns
    -------
    dict
        ``{"label", "families", "subclusters", "test", "methods": [{"method", "net", "wins", "losses",
        "draws", "unknown"}], "verdicts", "p_values", "p_adjusted", "mean_difference", "mean_interval"}``;
        verdicts are "+"/"-"/"="/"?" of the row method, as in the family-level report.
    """
    names = table.methods
    m = len(names)
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    stats = []
    for a, b in pairs:
        w = present[a] & present[b]
        stats.append(stratified_mean_test(scores[a, w] - scores[b, w], codes[w]))
    mean = np.array([s[0] for s in stats], dtype=np.float64)
    se = np.array([s[1] for s in stats], dtype=np.float64)
    df = np.array([max(s[2], 1) for s in stats], dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, mean / se, np.where(mean != 0, np.inf, 0.0))
        p = np.where(np.isfinite(se), 2 * stdtr(df, -np.abs(t)), np.nan)
    half = stdtrit(df, 0.5 + confidence / 2) * se
    adjusted = holm_adjust(p) if pairs else np.zeros(0)
    verdicts = {x: {} for x in names}
    keys = ("p_values", "p_adjusted", "mean_difference", "mean_interval")
    out = {key: {x: {} for x in names} for key in keys}
    for k, (a, b) in enumerate(pairs):
        x, y = names[a], names[b]
        if np.isfinite(adjusted[k]) and adjusted[k] < alpha and mean[k] != 0:
            v = WIN if mean[k] > 0 else LOSS
        elif np.isfinite(half[k]) and -delta < mean[k] - half[k] and mean[k] + half[k] < delta:
            v = DRAW
        else:
            v = UNKNOWN
        verdicts[x][y], verdicts[y][x] = v, {WIN: LOSS, LOSS: WIN}.get(v, v)
        for key, value in (("p_values", p[k]), ("p_adjusted", adjusted[k])):
            out[key][x][y] = out[key][y][x] = float(value) if np.isfinite(value) else None
        out["mean_difference"][x][y], out["mean_difference"][y][x] = float(mean[k]), -float(mean[k])
        if np.isfinite(half[k]):
            low, high = float(mean[k] - half[k]), float(mean[k] + half[k])
            out["mean_interval"][x][y], out["mean_interval"][y][x] = [low, high], [-high, -low]
    for a in range(m):
        for b in range(m):
            if a != b and names[b] not in verdicts[names[a]]:
                verdicts[names[a]][names[b]] = UNKNOWN
    rows = []
    for x in names:
        row = list(verdicts[x].values())
        wins, losses = row.count(WIN), row.count(LOSS)
        rows.append({"method": x, "net": wins - losses, "wins": wins, "losses": losses,
                     "draws": row.count(DRAW), "unknown": row.count(UNKNOWN)})
    net = np.array([r["net"] for r in rows])
    for r in rows:
        r["rank"] = int(1 + (net > r["net"]).sum())
    rows.sort(key=lambda r: (r["rank"], r["method"]))
    families = int(np.unique(codes).size)
    return {
        "label": LABEL.format(families=families),
        "families": families,
        "subclusters": SUBCLUSTERS,
        "test": "stratified two-sided t-test of the target-weighted mean per-target MCC difference (family "
        f"strata, variance within families), Holm across the pairs, alpha {alpha:g}; '=' when the "
        f"{confidence:.0%} interval lies inside +-{delta:g}",
        "methods": rows,
        "verdicts": verdicts,
        **out,
    }
