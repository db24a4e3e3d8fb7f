"""The JSON-ready report of a subset's ranking (what ``rank --counts`` prints and the nightly job stores), and
its views under the two protocols (SCIENCE.md §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from comparna.rna import thresholds
from comparna.rna.conditional import within_families
from comparna.rna.counts_table import (
    DRAW,
    LOSS,
    MIN_COMMON,
    WIN,
    CountsTable,
    pooled_mcc,
    read_counts_with_families,
)
from comparna.rna.pair_ranks import _codes, pair_effects, pair_signed_ranks, per_target_mcc
from comparna.rna.protocol_2013 import pairwise_ranking
from comparna.rna.rank_intervals import rank_intervals, robustness_intervals
from comparna.rna.ranking_result import PairwiseRanking, competition_ranks, robustness_counts
from comparna.rna.target_verdicts import REASONS, decided_scores, target_level_ranking


def _pair_dict(methods: Sequence[str], matrix: np.ndarray, cast=float) -> dict:
    out = {}
    for i, a in enumerate(methods):
        row = {}
        for j, b in enumerate(methods):
            if i != j:
                v = matrix[i, j]
                row[b] = None if (isinstance(v, float | np.floating) and not np.isfinite(v)) else cast(v)
        out[a] = row
    return out


def _method_rows(
    table: CountsTable, result: PairwiseRanking, own_mcc: np.ndarray, tie_order: np.ndarray | None = None
) -> list[dict]:
    """One row per method in rank order; within a shared rank by ``tie_order`` (higher first), then name."""
    tie = np.zeros(len(table.methods)) if tie_order is None else np.nan_to_num(tie_order, nan=-np.inf)
    order = sorted(range(len(table.methods)), key=lambda i: (int(result.ranks[i]), -tie[i], table.methods[i]))
    return [
        {
            "method": table.methods[i],
            "rank": int(result.ranks[i]),
            "wins": int(result.wins[i]),
            "losses": int(result.losses[i]),
            "draws": int(result.draws[i]),
            "unknown": int(result.unknown[i]),
            "mcc": float(own_mcc[i]),
            "targets": int(table.present[i].sum()),
        }
        for i in order
    ]


def protocol_2013_report(table: CountsTable, *, seed: int) -> dict:
    """The CompaRNA 2013 protocol's view (:func:`pairwise_ranking`): ``{"label", "methods", "verdicts",
    "p_values", "conventions"}``, labelled so that it is never mistaken for the primary verdict."""
    result = pairwise_ranking(table, seed=seed)
    own_mcc = pooled_mcc(np.where(table.present[..., None], table.counts, 0))
    return {
        "label": thresholds.PROTOCOL_2013_LABEL,
        "methods": _method_rows(table, result, own_mcc),
        "verdicts": result.verdict_dict(),
        "p_values": _pair_dict(table.methods, result.p_values),
        "conventions": result.conventions,
    }


def budgeted_resamples(resamples: int, *, pairs: int, families: int) -> int:
    """The rank-interval resamples within :data:`comparna.rna.thresholds.RANK_INTERVAL_BUDGET` (resamples ×
    pairs × families), never below :data:`~comparna.rna.thresholds.RANK_MIN_RESAMPLES` (nor above the asked
    number)."""
    if resamples <= 0 or pairs == 0:
        return resamples
    fit = thresholds.RANK_INTERVAL_BUDGET // max(1, pairs * max(families, 1))
    return int(min(resamples, max(thresholds.RANK_MIN_RESAMPLES, fit)))


def decision_summary(result: PairwiseRanking) -> dict:
    """The share of a subset's pairs decided, and why the others are not (SCIENCE.md §5).

    Returns ``{"pairs", "tested", "won", "equal", "unknown", "share_won", "share_equal", "share_unknown",
    "reasons": {reason: pairs}, "floor"}`` over the M(M−1)/2 pairs (a win counts once per pair).
    """
    m = len(result.methods)
    upper = np.triu(np.ones((m, m), dtype=bool), k=1)
    verdicts = result.verdicts[upper]
    reasons = result.reasons[upper] if result.reasons is not None else np.full(verdicts.size, "")
    pairs = int(verdicts.size)
    won = int(np.isin(verdicts, (WIN, LOSS)).sum())
    equal = int((verdicts == DRAW).sum())
    unknown = pairs - won - equal
    share = (lambda k: round(k / pairs, 4)) if pairs else (lambda k: None)
    return {
        "pairs": pairs,
        "tested": int((result.common[upper] >= MIN_COMMON).sum()),
        "won": won,
        "equal": equal,
        "unknown": unknown,
        "share_won": share(won),
        "share_equal": share(equal),
        "share_unknown": share(unknown),
        "reasons": {code: int((reasons == code).sum()) for code in REASONS if (reasons == code).any()},
        "floor": result.floor,
    }


def _pair_lists(methods: Sequence[str], *matrices: np.ndarray, cast=float) -> dict:
    """``{A: {B: [x, y, …]}}`` of several (M, M) matrices (None where the first is not finite)."""
    out = {}
    for i, a in enumerate(methods):
        row = {}
        for j, b in enumerate(methods):
            if i != j:
                values = [matrix[i, j] for matrix in matrices]
                row[b] = [cast(v) for v in values] if np.isfinite(values[0]) and values[0] != -1 else None
        out[a] = row
    return out


def ranking_report(
    table: CountsTable,
    *,
    seed: int,
    clusters: Sequence[str] | None = None,
    rank_resamples: int = thresholds.RANK_RESAMPLES,
    with_2013: bool = True,
    effects: bool = True,
    robustness: bool = True,
) -> dict:
    """Run the target-level pairwise verdicts, the rank intervals, the robustness ranking and (labelled) the
    CompaRNA 2013 protocol; return the JSON-ready report of ``rank --counts``.

    Parameters
    ----------
    clusters : sequence of str, optional
        The family of every target (None: every target its own family, as for a counts CSV without a
        ``family`` column).
    rank_resamples : int
        Family bootstrap resamples of the rank intervals (0: no bootstrap; the interval is then the span
        of the method's tie).
    effects : bool
        Compute the Hodges–Lehmann shifts beside the verdicts.
    robustness : bool
        Compute the robustness ranking (the nightly job computes it itself, on the finished targets).

    Returns
    -------
    dict
        ``{"protocol": "target", "methods": [{"method", "rank", "rank_low", "rank_high", "net", "wins",
        "losses", "draws", "unknown", "mcc", "targets", "decided_mcc", "decided_targets"}]`` in rank
        order (net wins; a tie by the MCC on the decided targets), ``"verdicts": {A: {B: "+"|"-"|"="|"?"}}``
        ("+" when A beats B), ``"verdict_reasons"`` (for a "?": few / floor / direction / undecided /
        open), ``"p_values"``, ``"p_adjusted"``, ``"mean_interval"`` ({A: {B: [low, high]}}, 90 %),
        ``"hodges_lehmann"`` ({A: {B: [shift, low, high]}}, 95 %), ``"to_decide"`` ({A: {B: [targets,
        families]}} for an open pair), ``"pair_clusters"``, ``"common_targets"``, ``"clusters"``,
        ``"decisions"`` (:func:`decision_summary`), ``"within_families"`` (only when the subset floor fires:
        :func:`comparna.rna.conditional.within_families`, labelled conditional), ``"rank_interval"``,
        ``"robustness": [{"method", "rank", "rank_low", "rank_high", "mcc", "targets"}]`` with
        ``"robustness_n"``, ``"protocol_2013"`` (:func:`protocol_2013_report`) ``"seed"``, ``"conventions"``.
    """
    codes = _codes(clusters, len(table.targets))
    m = len(table.methods)
    common = table.present.astype(np.int64) @ table.present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= MIN_COMMON]
    # one pass over every pair serves the verdicts and the rank intervals; the Hodges–Lehmann shifts of every
    # pair only within the effect budget (else of neighbours in the order, below)
    every_effect = effects and int(sum(common[a, b] for a, b in pairs)) <= thresholds.EFFECT_BUDGET
    pair_data = pair_signed_ranks(table, codes, pairs, sums=rank_resamples > 0, effects=every_effect)
    result = target_level_ranking(table, clusters=clusters, seed=seed, pair_data=pair_data)
    own_mcc = pooled_mcc(np.where(table.present[..., None], table.counts, 0))
    decided = dict(zip(table.methods, decided_scores(table, result), strict=True))
    scores = per_target_mcc(table)
    with np.errstate(invalid="ignore"):
        own_mean = np.where(table.present, scores, 0).sum(axis=1) / table.present.sum(axis=1)
    tie = np.array([
        decided[name]["decided_mcc"] if decided[name]["decided_mcc"] is not None else own_mean[i]
        for i, name in enumerate(table.methods)
    ], dtype=np.float64)
    methods = _method_rows(table, result, own_mcc, tie_order=tie)
    n_families = int((pair_data.signed != 0).any(axis=1).sum()) if pair_data.signed is not None else 0
    resamples = budgeted_resamples(rank_resamples, pairs=len(pairs), families=n_families)
    floored = bool(result.floor and result.floor["fires"])
    if floored:
        # a resample draws C families (a family drawn k times counts as k sign flips), so its smallest p is
        # 2/2^C too and Holm's first step P·2/2^C ≥ α: no resample can decide a pair, every interval is the
        # point's tie span [1, M] — exactly what the bootstrap would return, without its cost
        resamples = 0
    low, high = rank_intervals(
        table, clusters=clusters, seed=seed, resamples=resamples, pair_data=pair_data, point=result.net
    )
    effect_pairs = "all" if every_effect else "none"
    if effects and not every_effect:
        effect_pairs = "neighbours"
        where = {name: i for i, name in enumerate(table.methods)}
        order = [where[row["method"]] for row in methods]
        near = sorted({tuple(sorted(p)) for p in zip(order, order[1:], strict=False)}
                      & {tuple(p) for p in pairs})
        for (a, b), (shift, lo, hi) in zip(near, pair_effects(table, codes, near), strict=True):
            result.hl[a, b], result.hl_low[a, b], result.hl_high[a, b] = shift, lo, hi
            result.hl[b, a], result.hl_low[b, a], result.hl_high[b, a] = -shift, -hi, -lo
    for row in methods:
        i = table.methods.index(row["method"])
        row.update(decided[row["method"]], rank_low=int(low[i]), rank_high=int(high[i]),
                   net=int(result.net[i]))
    names = table.methods
    report = {
        "protocol": "target",
        "protocol_label": thresholds.PROTOCOL_TARGET_LABEL,
        "methods": methods,
        "verdicts": result.verdict_dict(),
        "verdict_reasons": _pair_dict(names, result.reasons, str),
        "p_values": _pair_dict(names, result.p_values),
        "p_adjusted": _pair_dict(names, result.p_adjusted),
        "mean_difference": _pair_dict(names, result.mean_difference),
        "mean_interval": _pair_lists(names, result.interval_low, result.interval_high),
        "hodges_lehmann": _pair_lists(names, result.hl, result.hl_low, result.hl_high),
        "to_decide": _pair_lists(names, result.needed_targets, result.needed_families, cast=int),
        "pair_clusters": _pair_dict(names, result.clusters, int),
        "common_targets": result.common_dict(),
        "clusters": int(np.unique(codes).size),
        "decisions": decision_summary(result),
        "hodges_lehmann_pairs": effect_pairs,
        "rank_interval": {"resamples": resamples, "confidence": thresholds.RANK_CONFIDENCE,
                          "rule": "net wins, the same test and win rule as the verdicts"
                          + ("; no resample can beat the subset floor: the tie span" if floored else "")},
        "seed": result.seed,
        "conventions": result.conventions,
    }
    if result.floor and result.floor["fires"]:
        # the families cannot decide anything: the conditional view beside it, under its own key and label
        report["within_families"] = within_families(table, scores, codes)
    if with_2013:
        report["protocol_2013"] = protocol_2013_report(table, seed=seed)
    if not robustness:
        return report
    try:
        filled = robustness_counts(table)
    except ValueError as error:
        report["robustness"] = None
        report["robustness_error"] = str(error)
    else:
        report.update(robustness_report(table.methods, filled, table.present.sum(axis=1), clusters=clusters,
                                        seed=seed, resamples=min(rank_resamples, thresholds.RANK_RESAMPLES)))
    return report


def robustness_report(
    methods: Sequence[str],
    filled: np.ndarray,
    coverage: np.ndarray,
    *,
    clusters: Sequence[str] | None,
    seed: int,
    resamples: int = thresholds.RANK_RESAMPLES,
) -> dict:
    """``{"robustness": [{"method", "rank", "rank_low", "rank_high", "mcc", "targets"}], "robustness_n":
    {"targets", "clusters", "resamples"}}``: pooled MCC over every target (``filled``:
    :func:`comparna.rna.ranking_result.robustness_counts`; ``coverage``: each method's predicted targets),
    ranks with their family-bootstrap interval."""
    mcc = pooled_mcc(filled)
    ranks = competition_ranks(mcc)
    low, high = robustness_intervals(filled, clusters=clusters, seed=seed, resamples=resamples)
    order = sorted(range(len(methods)), key=lambda i: (int(ranks[i]), methods[i]))
    codes = _codes(clusters, filled.shape[1])
    return {
        "robustness": [
            {"method": methods[i], "rank": int(ranks[i]), "rank_low": int(low[i]), "rank_high": int(high[i]),
             "mcc": float(mcc[i]), "targets": int(coverage[i])}
            for i in order
        ],
        "robustness_n": {"targets": int(filled.shape[1]), "clusters": int(np.unique(codes).size),
                         "resamples": resamples},
    }


def protocol_view(report: Mapping, protocol: str) -> dict:
    """The report as seen under one protocol: ``"target"`` (the primary) or ``"2013"`` (the CompaRNA 2013
    protocol's methods and verdicts in place of the primary ones, labelled). A report stored before issue 27
    has only the 2013 verdicts at its top level: it is returned as the 2013 view, and the target view of it
    is ``None``."""
    if protocol not in ("target", "2013"):
        raise ValueError(f"unknown protocol {protocol!r} (target or 2013)")
    stored_2013 = report.get("protocol_2013")
    is_old = report.get("protocol") is None
    if protocol == "target":
        return None if is_old else dict(report)
    if is_old:
        return {**report, "protocol": "2013", "protocol_label": thresholds.PROTOCOL_2013_LABEL}
    if stored_2013 is None:
        return None
    view = {k: v for k, v in report.items() if k not in ("protocol_2013",)}
    view.update(
        protocol="2013",
        protocol_label=stored_2013["label"],
        methods=stored_2013["methods"],
        verdicts=stored_2013["verdicts"],
        p_values=stored_2013.get("p_values", {}),
        conventions=stored_2013.get("conventions", {}),
    )
    for key in ("verdict_reasons", "p_adjusted", "power", "pair_clusters", "mean_difference", "mean_interval",
                "hodges_lehmann", "to_decide", "decisions", "within_families"):
        view.pop(key, None)
    return view


def rank_from_counts_csv(
    path: str | Path, seed: int, *, rank_resamples: int = thresholds.RANK_RESAMPLES
) -> dict:
    """Read a counts CSV (:func:`comparna.rna.counts_table.read_counts_with_families`: an optional ``family``
    column, one label per target; without it every target is its own family) and return
    :func:`ranking_report` for it."""
    table, families = read_counts_with_families(path)
    return ranking_report(table, seed=seed, clusters=families, rank_resamples=rank_resamples)
