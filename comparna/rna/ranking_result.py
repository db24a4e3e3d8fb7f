"""What both ranking protocols return (:class:`PairwiseRanking`), how a verdict matrix becomes wins,
losses and ranks, and the robustness ranking (SCIENCE.md §5)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from comparna.rna.counts_table import COUNT_FIELDS, DRAW, LOSS, UNKNOWN, WIN, CountsTable, pooled_mcc


@dataclass(frozen=True)
class PairwiseRanking:
    """The outcome of all pairwise comparisons on one subset ("Figure 2" of Puton et al. 2013).

    Attributes
    ----------
    methods : tuple of str
    verdicts : numpy.ndarray
        (M, M) array of "+", "-", "=", "?" (diagonal ""); ``verdicts[a, b] == "+"`` when a beats b.
    common : numpy.ndarray
        (M, M) int, number of common targets of each pair (diagonal: the method's own count).
    p_values : numpy.ndarray
        (M, M) Wilcoxon p-values (NaN for "?" pairs, the diagonal and all-zero differences).
    mean_difference : numpy.ndarray
        (M, M) mean over replicates of MCC(a) − MCC(b) (NaN for "?" pairs).
    wins, losses, draws, unknown, ranks : numpy.ndarray
        Per method; ``ranks`` is the competition rank by wins (2013 protocol) or net wins (target level).
    seed : int
    conventions : dict
    p_adjusted : numpy.ndarray or None
        (M, M) Holm-adjusted p-values (target-level verdict only).
    reasons : numpy.ndarray or None
        (M, M) why a verdict is "?" (target-level verdict only; "" otherwise): "few" (under ``min_common``
        common targets), "floor" (the subset's families cannot give an adjusted p below α), "direction"
        (significant, but the mean difference favours the other method), "undecided" (the exact p could
        not be placed on one side of its threshold) or "open" (neither a win nor an equivalence yet).
    clusters : numpy.ndarray or None
        (M, M) families among each pair's common targets (target-level verdict only).
    interval_low, interval_high : numpy.ndarray or None
        (M, M) the family-clustered 90 % interval of the mean difference row − column (the equivalence
        test's; target-level verdict only).
    hl, hl_low, hl_high : numpy.ndarray or None
        (M, M) the Hodges–Lehmann shift row − column with its family-clustered 95 % interval.
    needed_targets, needed_families : numpy.ndarray or None
        (M, M) for an "open" pair, about how many more targets (families) would decide it, from the
        clustered variance (-1 where it does not apply).
    floor : dict or None
        The subset's floor: ``{"families", "pairs", "floor", "alpha", "fires", "families_needed"}``.
    """

    methods: tuple[str, ...]
    verdicts: np.ndarray
    common: np.ndarray
    p_values: np.ndarray
    mean_difference: np.ndarray
    wins: np.ndarray
    losses: np.ndarray
    draws: np.ndarray
    unknown: np.ndarray
    ranks: np.ndarray
    seed: int
    conventions: dict = field(default_factory=dict)
    p_adjusted: np.ndarray | None = None
    reasons: np.ndarray | None = None
    clusters: np.ndarray | None = None
    interval_low: np.ndarray | None = None
    interval_high: np.ndarray | None = None
    hl: np.ndarray | None = None
    hl_low: np.ndarray | None = None
    hl_high: np.ndarray | None = None
    needed_targets: np.ndarray | None = None
    needed_families: np.ndarray | None = None
    floor: dict | None = None

    @property
    def net(self) -> np.ndarray:
        """Net wins per method (wins − losses): the target-level order."""
        return self.wins - self.losses

    def verdict_dict(self) -> dict[str, dict[str, str]]:
        """``{A: {B: verdict}}`` for every A != B."""
        return {
            a: {b: str(self.verdicts[i, j]) for j, b in enumerate(self.methods) if j != i}
            for i, a in enumerate(self.methods)
        }

    def common_dict(self) -> dict[str, dict[str, int]]:
        """``{A: {B: number of common targets}}`` for every A != B."""
        return {
            a: {b: int(self.common[i, j]) for j, b in enumerate(self.methods) if j != i}
            for i, a in enumerate(self.methods)
        }


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1 + the number of strictly better scores (ties share the best rank: 1, 1, 3)."""
    scores = np.asarray(scores)
    return 1 + (scores[None, :] > scores[:, None]).sum(axis=1)


def pairwise_result(
    table: CountsTable, verdicts: np.ndarray, *, seed: int, net: bool = False, **fields
) -> PairwiseRanking:
    """A :class:`PairwiseRanking` from a verdict matrix: wins, losses, draws, "?" and competition ranks
    counted from it, the other fields as given. Ranks are by wins (the 2013 protocol) or, with ``net``, by
    net wins, wins − losses (the target-level order: a method that lost 29 times never shares the rank of
    one that lost none)."""
    wins = (verdicts == WIN).sum(axis=1)
    losses = (verdicts == LOSS).sum(axis=1)
    return PairwiseRanking(
        methods=table.methods,
        verdicts=verdicts,
        wins=wins,
        losses=losses,
        draws=(verdicts == DRAW).sum(axis=1),
        unknown=(verdicts == UNKNOWN).sum(axis=1),
        ranks=competition_ranks(wins - losses if net else wins),
        seed=int(seed),
        **fields,
    )


def tie_spans(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranks a method can take among methods ordered by ``scores`` (higher first), ties unresolved:
    from 1 + the number strictly better to the number at least as good (a tie of 3 at the top: 1–3)."""
    scores = np.asarray(scores)
    better = (scores[None, :] > scores[:, None]).sum(axis=1)
    at_least = (scores[None, :] >= scores[:, None]).sum(axis=1)
    return 1 + better, at_least


@dataclass(frozen=True)
class RobustnessRanking:
    """Every method over the whole subset, missing predictions counted as empty structures (SCIENCE.md §5).

    Attributes
    ----------
    methods : tuple of str
    mcc : numpy.ndarray
        Pooled MCC per method.
    coverage : numpy.ndarray
        Number of targets the method predicted.
    ranks : numpy.ndarray
        Competition ranks by MCC (1 = best).
    """

    methods: tuple[str, ...]
    mcc: np.ndarray
    coverage: np.ndarray
    ranks: np.ndarray


def target_totals(table: CountsTable) -> tuple[np.ndarray, np.ndarray]:
    """Reference pairs (TP+FN) and candidate pairs (TP+FN+FP+TN) of every target, read off its predictions.

    Raises
    ------
    ValueError
        If a target has no prediction, or predictions of one target disagree on either total.
    """
    c = table.counts
    reference = c[..., 0] + c[..., 1]
    candidates = c[..., 0] + c[..., 1] + c[..., 2] + c[..., 4]
    n_pred = table.present.sum(axis=0)
    if (n_pred == 0).any():
        missing = table.targets[int(np.argmax(n_pred == 0))]
        raise ValueError(f"target {missing} has no prediction; pass its reference and candidate pair counts")
    ref_t = np.where(table.present, reference, 0).max(axis=0)
    cand_t = np.where(table.present, candidates, 0).max(axis=0)
    bad = (table.present & ((reference != ref_t) | (candidates != cand_t))).any(axis=0)
    if bad.any():
        raise ValueError(
            f"predictions of target {table.targets[int(np.argmax(bad))]} disagree on TP+FN or on TP+FN+FP+TN"
        )
    return ref_t, cand_t


def robustness_ranking(
    table: CountsTable,
    *,
    reference_pairs: np.ndarray | None = None,
    candidate_pairs: np.ndarray | None = None,
) -> RobustnessRanking:
    """Pooled MCC of every method over all targets with a missing prediction scored as no base pairs.

    A missing prediction contributes TP = FP = ε = 0, FN = the target's reference pairs, TN = its candidate
    pairs L(L−1)/2 minus FN.

    Parameters
    ----------
    table : CountsTable
    reference_pairs, candidate_pairs : numpy.ndarray, optional
        Per target; read off the predictions (:func:`target_totals`) when not given.
    """
    filled = robustness_counts(table, reference_pairs=reference_pairs, candidate_pairs=candidate_pairs)
    mcc = pooled_mcc(filled)
    return RobustnessRanking(table.methods, mcc, table.present.sum(axis=1), competition_ranks(mcc))


def robustness_counts(
    table: CountsTable,
    *,
    reference_pairs: np.ndarray | None = None,
    candidate_pairs: np.ndarray | None = None,
) -> np.ndarray:
    """(methods, targets, 5) counts with every missing prediction filled in as an empty structure
    (:func:`robustness_ranking`; totals read off the predictions when not given)."""
    if reference_pairs is None or candidate_pairs is None:
        reference_pairs, candidate_pairs = target_totals(table)
    empty = np.zeros((len(table.targets), len(COUNT_FIELDS)), dtype=np.int64)
    empty[:, 1] = reference_pairs
    empty[:, 4] = np.asarray(candidate_pairs) - np.asarray(reference_pairs)
    return np.where(table.present[..., None], table.counts, empty[None])
