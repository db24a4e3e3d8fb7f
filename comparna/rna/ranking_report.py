"""The JSON-ready report of a subset's ranking (what ``rank --counts`` prints and the nightly job stores), and
its views under the two protocols (SCIENCE.md §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from comparna.rna import thresholds
from comparna.rna.counts_table import MIN_COMMON, CountsTable, pooled_mcc, read_counts_csv
from comparna.rna.pair_ranks import _codes, pair_signed_ranks
from comparna.rna.protocol_2013 import pairwise_ranking
from comparna.rna.rank_intervals import rank_intervals
from comparna.rna.ranking_result import PairwiseRanking, robustness_ranking
from comparna.rna.target_verdicts import decided_scores, target_level_ranking


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


def _method_rows(table: CountsTable, result: PairwiseRanking, own_mcc: np.ndarray) -> list[dict]:
    order = sorted(range(len(table.methods)), key=lambda i: (int(result.ranks[i]), table.methods[i]))
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


def ranking_report(
    table: CountsTable,
    *,
    seed: int,
    clusters: Sequence[str] | None = None,
    rank_resamples: int = thresholds.RANK_RESAMPLES,
    with_2013: bool = True,
) -> dict:
    """Run the target-level pairwise verdicts, the rank intervals, the robustness ranking and (labelled) the
    CompaRNA 2013 protocol; return the JSON-ready report of ``rank --counts``.

    Parameters
    ----------
    clusters : sequence of str, optional
        The family of every target (None: every target its own family, as for a counts CSV).
    rank_resamples : int
        Family bootstrap resamples of the rank intervals (0: no intervals).

    Returns
    -------
    dict
        ``{"protocol": "target", "methods": [{"method", "rank", "rank_low", "rank_high", "wins", "losses",
        "draws", "unknown", "mcc", "targets", "decided_mcc", "decided_targets"}]`` sorted by rank then name,
        ``"verdicts": {A: {B: "+"|"-"|"="|"?"}}`` ("+" when A beats B), ``"verdict_reasons"`` ("few" /
        "power" for a "?"), ``"p_values"``, ``"p_adjusted"``, ``"power"``, ``"pair_clusters"``,
        ``"common_targets": {A: {B: n}}``, ``"clusters"`` (families in the subset),
        ``"robustness": [{"method", "rank", "mcc", "targets"}]``, ``"protocol_2013"``
        (:func:`protocol_2013_report`), ``"seed"`` and ``"conventions"``.
    """
    codes = _codes(clusters, len(table.targets))
    m = len(table.methods)
    common = table.present.astype(np.int64) @ table.present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= MIN_COMMON]
    # one pass over every pair serves the verdicts and the rank intervals
    pair_data = pair_signed_ranks(table, codes, pairs, sums=rank_resamples > 0)
    result = target_level_ranking(table, clusters=clusters, seed=seed, pair_data=pair_data)
    own_mcc = pooled_mcc(np.where(table.present[..., None], table.counts, 0))
    methods = _method_rows(table, result, own_mcc)
    decided = dict(zip(table.methods, decided_scores(table, result), strict=True))
    if rank_resamples > 0:
        low, high = rank_intervals(
            table, clusters=clusters, seed=seed, resamples=rank_resamples, pair_data=pair_data
        )
    else:
        low = high = result.ranks
    for row in methods:
        i = table.methods.index(row["method"])
        row.update(decided[row["method"]], rank_low=int(low[i]), rank_high=int(high[i]))
    report = {
        "protocol": "target",
        "protocol_label": thresholds.PROTOCOL_TARGET_LABEL,
        "methods": methods,
        "verdicts": result.verdict_dict(),
        "verdict_reasons": _pair_dict(table.methods, result.reasons, str),
        "p_values": _pair_dict(table.methods, result.p_values),
        "p_adjusted": _pair_dict(table.methods, result.p_adjusted),
        "power": _pair_dict(table.methods, result.power),
        "pair_clusters": _pair_dict(table.methods, result.clusters, int),
        "common_targets": result.common_dict(),
        "clusters": int(np.unique(codes).size),
        "rank_interval": {"resamples": rank_resamples, "confidence": thresholds.RANK_CONFIDENCE},
        "seed": result.seed,
        "conventions": result.conventions,
    }
    if with_2013:
        report["protocol_2013"] = protocol_2013_report(table, seed=seed)
    try:
        robust = robustness_ranking(table)
    except ValueError as error:
        report["robustness"] = None
        report["robustness_error"] = str(error)
    else:
        r_order = sorted(range(len(table.methods)), key=lambda i: (int(robust.ranks[i]), table.methods[i]))
        report["robustness"] = [
            {
                "method": table.methods[i],
                "rank": int(robust.ranks[i]),
                "mcc": float(robust.mcc[i]),
                "targets": int(robust.coverage[i]),
            }
            for i in r_order
        ]
    return report


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
    for key in ("verdict_reasons", "p_adjusted", "power", "pair_clusters"):
        view.pop(key, None)
    return view


def rank_from_counts_csv(path: str | Path, seed: int) -> dict:
    """Read a counts CSV (:func:`read_counts_csv`) and return :func:`ranking_report` for it."""
    return ranking_report(read_counts_csv(path), seed=seed)
