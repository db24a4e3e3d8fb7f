"""ThreshKnot: a pseudoknot-capable decoder of base-pair probabilities (standard library only).

Zhang L, Zhang H, Mathews DH, Huang L. ThreshKnot: Thresholded ProbKnot for improved RNA secondary structure
prediction. arXiv:1912.12796 (2019): keep (i, j) when p(i, j) >= theta and i and j are each other's most
probable partners. Any model's probabilities can be decoded so (LinearPartition, McCaskill, CONTRAfold).
"""

from __future__ import annotations

#: The threshold the paper recommends.
DEFAULT_THETA = 0.3


def threshknot(probs: list[tuple[int, int, float]], theta: float = DEFAULT_THETA) -> list[tuple[int, int]]:
    """Pairs (i, j) with p >= theta that are the most probable partner of both i and j."""
    best: dict[int, float] = {}
    for i, j, p in probs:
        best[i] = max(best.get(i, 0.0), p)
        best[j] = max(best.get(j, 0.0), p)
    return [(i, j) for i, j, p in probs if p >= theta and p == best[i] and p == best[j]]
