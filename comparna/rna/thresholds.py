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
#: Equivalence margin δ of the verdict "=" (SCIENCE.md §5): a draw is declared only when the family-clustered
#: :data:`EQUIVALENCE_CONFIDENCE` interval of the mean per-target MCC difference lies inside ±δ (two one-sided
#: tests, Schuirmann 1987) **[convention: 0.02 MCC, below the spread between neighbouring methods of the
#: 2013 tables]**. (The pair-statistics page's "practically equal", :data:`comparna.rna.clustered.
#: EQUIVALENCE_DELTA`, is a separate, finer view.)
EQUIVALENCE_DELTA = 0.02
#: Confidence of the interval the equivalence verdict reads: 90 %, i.e. two one-sided tests at 5 %.
EQUIVALENCE_CONFIDENCE = 0.90
#: Confidence of the effect sizes shown beside a verdict (the Hodges–Lehmann shift's clustered interval).
EFFECT_CONFIDENCE = 0.95
#: Bootstrap resamples of families behind each method's 95 % rank interval.
RANK_RESAMPLES = 1000
#: Work budget of the rank-interval bootstrap: resamples × tested pairs × families, each cell's p taken from
#: the sign-flip null (issue 35). Above it the resamples are cut to fit, never below
#: :data:`RANK_MIN_RESAMPLES`; the number used is stored with the report. 1.5·10⁸: at 100 methods (4950
#: pairs) ~300 resamples for 100 families, the minimum from ~300 families up (the nightly at full size).
RANK_INTERVAL_BUDGET = 150_000_000
RANK_MIN_RESAMPLES = 100
#: Work budget of the Hodges–Lehmann shifts (pairs × common targets); above it they are computed for the
#: pairs of methods next to each other in the order only (the report says which; every pair's shift is on
#: its comparison page). 10⁶: at 100 methods, subsets of up to ~200 targets (a 400-target subset cost 22 s).
EFFECT_BUDGET = 1_000_000
#: Confidence of the rank interval.
RANK_CONFIDENCE = 0.95
#: The CompaRNA 2013 protocol (a labelled view, never the headline): replicates and subsample fraction.
REPLICATES_2013 = 40
FRACTION_2013 = 0.9
#: Label of the 2013 view wherever it is shown.
PROTOCOL_2013_LABEL = "CompaRNA 2013 protocol"
#: Label of the primary verdict.
PROTOCOL_TARGET_LABEL = "target-level clustered Wilcoxon signed-rank (primary)"
