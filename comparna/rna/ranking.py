"""The CompaRNA ranking engine (SCIENCE.md §5), as one import: a façade over the modules that implement it.

- :mod:`comparna.rna.counts_table`: the input (:class:`CountsTable`) and the counts CSV of ``rank --counts``;
- :mod:`comparna.rna.pair_ranks`: per pair of methods, the per-target differences and their family sums;
- :mod:`comparna.rna.target_verdicts`: the primary, target-level verdicts (the verdict engine);
- :mod:`comparna.rna.rank_intervals`: each method's rank interval from a bootstrap of families;
- :mod:`comparna.rna.protocol_2013`: the CompaRNA 2013 replicate protocol (a labelled view);
- :mod:`comparna.rna.ranking_result`: what both protocols return, and the robustness ranking;
- :mod:`comparna.rna.ranking_report` / :mod:`comparna.rna.ranking_format`: the report and its text form.

Code outside the engine imports from here, so the modules behind it can move.
"""

from __future__ import annotations

from comparna.rna.counts_table import (
    ALPHA,
    COUNT_FIELDS,
    DRAW,
    LOSS,
    MIN_COMMON,
    UNKNOWN,
    WIN,
    CountsFormatError,
    CountsTable,
    pooled_mcc,
    read_counts_csv,
    read_counts_with_families,
)
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.pair_ranks import PairSignedRanks, _codes, pair_signed_ranks, per_target_mcc
from comparna.rna.protocol_2013 import (
    FRACTION,
    REPLICATES,
    draw_exclusions,
    engine_conventions,
    exclusion_width,
    first_distinct,
    kept_indices,
    pair_replicate_mccs,
    pair_rng,
    pairwise_ranking,
    rank_subsets,
    subsample_size,
    wilcoxon_pvalues,
)
from comparna.rna.rank_intervals import rank_intervals, robustness_intervals
from comparna.rna.ranking_format import compare_protocols, format_comparison, format_report
from comparna.rna.ranking_report import (
    decision_summary,
    protocol_2013_report,
    protocol_view,
    rank_from_counts_csv,
    ranking_report,
    robustness_report,
)
from comparna.rna.ranking_result import (
    PairwiseRanking,
    RobustnessRanking,
    competition_ranks,
    pairwise_result,
    robustness_counts,
    robustness_ranking,
    target_totals,
    tie_spans,
)
from comparna.rna.target_verdicts import (
    decided_scores,
    target_conventions,
    target_level_ranking,
)

_pairwise_result = pairwise_result

__all__ = [
    "ALPHA", "COUNT_FIELDS", "CountsFormatError", "CountsTable", "DRAW", "FRACTION", "LOSS", "MIN_COMMON",
    "PairSignedRanks", "PairwiseRanking", "REPLICATES", "RobustnessRanking", "UNKNOWN", "WIN", "_codes",
    "_pairwise_result", "compare_protocols", "competition_ranks", "decided_scores", "decision_summary",
    "draw_exclusions", "engine_conventions", "exclusion_width", "first_distinct",
    "format_comparison", "format_report", "kept_indices", "mcc_from_arrays", "pair_replicate_mccs",
    "pair_rng", "pair_signed_ranks", "pairwise_ranking", "pairwise_result", "per_target_mcc", "pooled_mcc",
    "protocol_2013_report", "protocol_view", "rank_from_counts_csv", "rank_intervals", "rank_subsets",
    "ranking_report", "read_counts_csv", "read_counts_with_families", "robustness_counts",
    "robustness_intervals", "robustness_ranking", "robustness_report", "subsample_size",
    "target_conventions", "target_level_ranking", "target_totals", "tie_spans", "wilcoxon_pvalues",
]
