"""Every threshold of the rankings' verdicts in one place (issue 27: one α, one text).

Pages, the API, the owner comparison and the engine read these names; a text that quotes a threshold
formats it from here, so a page can never say "α = 0.05, as in the rankings" while the rankings use 0.001.
Pure constants: the engine (no Django) and the services import the same module.
"""

from __future__ import annotations

#: Significance level of a pairwise verdict: Holm-adjusted p below it makes a win (SCIENCE.md §5).
ALPHA = 0.001
#: Fewer common targets than this gives the verdict "?" (Puton et al. 2013).
MIN_COMMON = 10
#: Equivalence margin of the power-aware "?": a draw ("=") is only declared when the pair had at least
#: :data:`VERDICT_POWER` power to detect a mean per-target MCC difference of this size at :data:`ALPHA`
#: **[convention: 0.05 MCC, about the spread between neighbouring methods of the 2013 tables]**.
VERDICT_MARGIN = 0.05
#: Power a non-significant pair needs to be called a draw rather than "?" (Xu et al. 2012 use 0.8).
VERDICT_POWER = 0.8
#: Bootstrap resamples of families behind each method's 95 % rank interval.
RANK_RESAMPLES = 1000
#: Confidence of the rank interval.
RANK_CONFIDENCE = 0.95
#: The CompaRNA 2013 protocol (a labelled view, never the headline): replicates and subsample fraction.
REPLICATES_2013 = 40
FRACTION_2013 = 0.9
#: Label of the 2013 view wherever it is shown.
PROTOCOL_2013_LABEL = "CompaRNA 2013 protocol"
#: Label of the primary verdict.
PROTOCOL_TARGET_LABEL = "target-level clustered Wilcoxon signed-rank (primary)"
