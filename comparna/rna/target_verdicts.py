"""The verdict engine: target-level verdicts of every pair of methods on a subset (SCIENCE.md §5, issue 35).

For every pair A, B with at least ``min_common`` (10) common targets, the per-target MCC differences A − B go
into the clustered Wilcoxon signed-rank test (Rosner, Glynn & Lee, Biometrics 2003/2006): signed ranks summed
per family, p from the **exact** distribution of the 2^C family sign flips
(:mod:`comparna.rna.verdict_statistics`; no verdict rests on an approximation). Then, in this order:

1. **"?" (few)**: fewer than ``min_common`` common targets.
2. **"?" (floor)**: with C families in the subset and P tested pairs, the smallest attainable Holm-adjusted p
   is P·2/2^C (Holm's first step); when it is not below α no family-level verdict is possible at all, and
   every pair of the subset is "?" with that reason (ArchiveII: 9 families, 2/2^9 = 0.0039 > 0.001).
3. **"+"/"−"**: Holm-adjusted p < α (0.001): the method the statistic T favours wins — **"?" (direction)**
   instead when the mean difference has the other sign ("A better on most targets, B better on average").
   A p that could not be placed on one side of its threshold is **"?" (undecided)**.
4. **"="**: only by equivalence — the family-clustered 90 % interval of the mean difference lies inside ±δ
   (two one-sided tests at 5 %, Schuirmann 1987; δ = :data:`comparna.rna.thresholds.EQUIVALENCE_DELTA`).
5. otherwise **"?" (open)**, with about how many further targets (and families) would decide it: from the
   family-robust (CR1) standard error of the mean, which shrinks as 1/√N when the subset grows with the same
   family structure — enough to put the 90 % interval inside ±δ, or the mean |d̄| at Holm's first-step z
   (whichever is fewer), and at least the families the floor requires. A planning figure, not a promise.

Methods are ranked by net wins (wins − losses; competition ranks, ties share a rank); beside each pair the
effect sizes: the mean difference with its 90 % clustered interval and the Hodges–Lehmann shift with its 95 %
clustered interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import ndtri

from comparna.rna import thresholds
from comparna.rna.counts_table import ALPHA, DRAW, LOSS, MIN_COMMON, UNKNOWN, WIN, CountsTable
from comparna.rna.pair_ranks import PairSignedRanks, _codes, pair_signed_ranks, per_target_mcc
from comparna.rna.ranking_result import PairwiseRanking, pairwise_result
from comparna.rna.statistics import holm_adjust
from comparna.rna.verdict_statistics import UNDECIDED

#: Why a verdict is "?" (stored in the report's ``verdict_reasons``).
FEW, FLOOR, DIRECTION, UNRESOLVED, OPEN = "few", "floor", "direction", "undecided", "open"
REASONS = (FEW, FLOOR, DIRECTION, UNRESOLVED, OPEN)


def target_conventions(
    *,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    delta: float = thresholds.EQUIVALENCE_DELTA,
) -> dict:
    """The conventions of :func:`target_level_ranking`, stored with every result."""
    return {
        "protocol": thresholds.PROTOCOL_TARGET_LABEL,
        "min_common_targets": min_common,
        "test": "paired Wilcoxon signed-rank on per-target MCC differences, respecting families: sign-flip "
        "permutation test of family-summed signed ranks (clustered signed-rank test of Rosner, Glynn & Lee, "
        "Biometrics 2003/2006); zero differences dropped, average ranks for ties; p from the exact "
        "distribution of the 2^C family sign flips (counted, or a saddlepoint approximation only far from "
        "every Holm threshold; exact bounds near one; a p that cannot be placed is '?')",
        "adjustment": "Holm (1979) across every tested pair of the subset",
        "alpha": alpha,
        "winner": "the method the signed-rank statistic favours; '?' when the mean difference has the "
        "other sign",
        "draw": f"equivalence only: the family-clustered {thresholds.EQUIVALENCE_CONFIDENCE:.0%} interval of "
        f"the mean per-target MCC difference inside +-{delta:g} (two one-sided tests, Schuirmann 1987)",
        "unknown": f"fewer than {min_common} common targets; or the subset's families cannot reach alpha "
        "after Holm (floor P*2/2^C >= alpha); or significant against the mean's sign; or neither a win nor "
        "an equivalence yet (with the further targets that would decide it)",
        "delta": delta,
        "equivalence_confidence": thresholds.EQUIVALENCE_CONFIDENCE,
        "rank": "competition ranking by net wins (wins - losses); a tie ordered by mean per-target MCC on "
        "the decided targets",
        "score": "per-target MCC with compatible FPs neutral (SCIENCE.md §2)",
        "clusters": "the dataset's declared family, else the Rfam assignment, else the target alone",
    }


def subset_floor(*, families: int, pairs: int, alpha: float = ALPHA) -> dict:
    """Whether any family-level verdict is possible on a subset of ``families`` families and ``pairs``
    tested pairs: the smallest two-sided sign-flip p is 2/2^C, Holm's first step multiplies it by P.

    Returns ``{"families", "pairs", "floor", "alpha", "fires", "families_needed"}``: ``fires`` when the floor
    P·2/2^C is not below α; ``families_needed`` the fewest families with P·2/2^C < α.
    """
    floor = math.ldexp(2.0 * max(pairs, 1), -families) if families < 2000 else 0.0
    needed = math.floor(math.log2(2.0 * max(pairs, 1) / alpha)) + 1
    return {
        "families": int(families),
        "pairs": int(pairs),
        "floor": float(floor),
        "alpha": alpha,
        "fires": bool(pairs > 0 and floor >= alpha),
        "families_needed": int(needed),
    }


def targets_to_decide(
    *, mean: float, se: float, n: int, families: int, delta: float, alpha: float, pairs: int, needed: int
) -> tuple[int, int]:
    """About how many more targets and families would decide an open pair (-1, -1 when unknown).

    The CR1 standard error ``se`` of the mean over ``n`` targets in ``families`` families scales as
    √(n/N) for N targets with the same family structure. Equivalence needs |d̄| + z₀.₉₅·se < δ, a win
    needs |d̄|/se ≥ z at Holm's first step (two-sided α/P): the fewer of the two, and at least the
    ``needed`` families of the subset floor.
    """
    if not (np.isfinite(se) and np.isfinite(mean)) or se <= 0 or n <= 0:
        return -1, -1
    totals = []
    if abs(mean) < delta:
        z = float(ndtri(0.5 + thresholds.EQUIVALENCE_CONFIDENCE / 2))
        totals.append(n * (se * z / (delta - abs(mean))) ** 2)
    if mean != 0:
        totals.append(n * (se * float(ndtri(1 - alpha / (2 * max(pairs, 1)))) / abs(mean)) ** 2)
    if not totals:
        return -1, -1
    total = max(min(totals), n + 1)
    more_families = max(math.ceil(families * total / n) - families, needed - families, 0)
    return int(math.ceil(total) - n), int(more_families)


def _matrix(m: int, fill=np.nan, dtype=np.float64) -> np.ndarray:
    return np.full((m, m), fill, dtype=dtype)


def target_level_ranking(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    delta: float = thresholds.EQUIVALENCE_DELTA,
    pair_data: PairSignedRanks | None = None,
) -> PairwiseRanking:
    """Compare every pair of methods at the target level (the primary verdict; module docstring).

    Parameters
    ----------
    table : CountsTable
        Counts of one dataset subset under one pair definition.
    clusters : sequence of str, optional
        The family of every target of the table (None: every target its own family).
    seed : int
        Recorded with the result (the verdicts themselves use no random numbers).
    alpha, min_common, delta
        0.001, 10 and 0.02 MCC (:mod:`comparna.rna.thresholds`).
    pair_data : PairSignedRanks, optional
        :func:`comparna.rna.pair_ranks.pair_signed_ranks` of the same table, clusters, pairs and ``alpha``
        (computed when not given; :func:`comparna.rna.ranking_report.ranking_report` shares it with the
        rank intervals).

    Returns
    -------
    PairwiseRanking
        ``p_values`` are the unadjusted p-values, ``p_adjusted`` Holm's, ``mean_difference`` the mean
        per-target MCC difference row − column; ranks by net wins.
    """
    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if pair_data is None:
        pair_data = pair_signed_ranks(table, codes, pairs, alpha=alpha)
    elif pair_data.pairs != pairs:
        raise ValueError("pair_data was computed for other pairs")
    floor = subset_floor(families=int(np.unique(codes).size), pairs=len(pairs), alpha=alpha)
    fields = {name: _matrix(m) for name in ("p_values", "mean_difference", "p_adjusted", "interval_low",
                                            "interval_high", "hl", "hl_low", "hl_high")}
    n_clusters = _matrix(m, 0, np.int64)
    needed_targets, needed_families = _matrix(m, -1, np.int64), _matrix(m, -1, np.int64)
    verdicts = _matrix(m, UNKNOWN, "<U1")
    reasons = _matrix(m, FEW, "<U9")
    np.fill_diagonal(verdicts, "")
    np.fill_diagonal(reasons, "")
    if pairs:
        pa, pb = np.array(pairs).T
        d = pair_data
        adjusted = holm_adjust(d.pvalue)

        def put(name, forward, backward=None):
            fields[name][pa, pb] = forward
            fields[name][pb, pa] = forward if backward is None else backward

        put("p_values", d.pvalue)
        put("p_adjusted", adjusted)
        put("mean_difference", d.mean, -d.mean)
        put("interval_low", d.low, -d.high)
        put("interval_high", d.high, -d.low)
        put("hl", d.hl, -d.hl)
        put("hl_low", d.hl_low, -d.hl_high)
        put("hl_high", d.hl_high, -d.hl_low)
        n_clusters[pa, pb] = n_clusters[pb, pa] = d.clusters
        significant = np.isfinite(adjusted) & (adjusted < alpha) & d.nonzero & (d.statistic != 0)
        agrees = np.sign(d.mean) == np.sign(d.statistic)
        equivalent = ~d.nonzero | ((d.low > -delta) & (d.high < delta))
        undecided = np.array([method == UNDECIDED for method in d.method], dtype=bool)
        forward = np.full(len(pairs), UNKNOWN, dtype="<U1")
        why = np.full(len(pairs), OPEN, dtype="<U9")
        if floor["fires"]:
            why[:] = FLOOR
        else:
            win = significant & agrees & ~undecided
            forward[win] = np.where(d.statistic[win] > 0, WIN, LOSS)
            why[win] = ""
            why[significant & ~agrees & ~undecided] = DIRECTION
            draw = ~win & ~(significant & ~agrees) & equivalent & ~undecided
            forward[draw] = DRAW
            why[draw] = ""
            why[undecided & ~win & ~draw] = UNRESOLVED
        backward = np.where(forward == WIN, LOSS, np.where(forward == LOSS, WIN, forward))
        verdicts[pa, pb], verdicts[pb, pa] = forward, backward
        reasons[pa, pb] = reasons[pb, pa] = why
        for k in np.flatnonzero(why == OPEN):
            more = targets_to_decide(
                mean=float(d.mean[k]), se=float(d.se[k]), n=int(d.n[k]), families=int(d.clusters[k]),
                delta=delta, alpha=alpha, pairs=len(pairs), needed=floor["families_needed"],
            )
            a, b = pairs[k]
            needed_targets[a, b] = needed_targets[b, a] = more[0]
            needed_families[a, b] = needed_families[b, a] = more[1]
    return pairwise_result(
        table, verdicts, common=common, seed=seed, net=True,
        conventions=target_conventions(alpha=alpha, min_common=min_common, delta=delta),
        reasons=reasons, clusters=n_clusters, needed_targets=needed_targets,
        needed_families=needed_families, floor=floor, **fields,
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
