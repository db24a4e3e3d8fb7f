"""Precision-recall evaluation of base-pair probabilities (SCIENCE.md §7).

A method that outputs base-pair probabilities is a classifier over all candidate pairs i < j of a sequence:
about L/2 true pairs among L(L−1)/2 candidates, so precision-recall is shown rather than ROC, with the random
baseline P/(P+N) (Saito & Rehmsmeier 2015, PLOS ONE 10:e0118432). Pairs a method does not report share the
score 0; they form one block at the end of the ranking, so only the reported scores are sorted and no
L²-sized array is ever built.

Between two consecutive PR points A and B (thresholds in decreasing order) the curve is interpolated
non-linearly (Davis & Goadrich 2006, ICML): for x = 1 … TP_B − TP_A,
``recall = (TP_A + x)/P``, ``precision = (TP_A + x)/(TP_A + x + FP_A + x·(FP_B − FP_A)/(TP_B − TP_A))``;
a step that adds only false positives (TP_B = TP_A) is a vertical drop to B. The curve starts at recall 0
with the precision of the first point (the limit of the interpolation from the origin), or 0 if the highest
threshold catches only false positives.

AUC-PR is the exact area under the interpolated curve, with x continuous between the PR points: on a segment
from A to B with ΔTP = TP_B − TP_A > 0 and ΔFP = FP_B − FP_A, precision is the rational function
(TP_A + x)/(TP_A + FP_A + x·(ΔTP + ΔFP)/ΔTP) of x ∈ [0, ΔTP], and recall = (TP_A + x)/P, so the segment's
area is, in closed form (see :func:`segment_areas`),

    (1/P) · [ ΔTP²/(ΔTP + ΔFP) + k·ΔTP/(ΔTP + ΔFP)² · ln(1 + (ΔTP + ΔFP)/(TP_A + FP_A)) ],
    k = TP_A·ΔFP − FP_A·ΔTP  (k = 0 on the first segment from the origin);

vertical steps have no area. A trapezoid over the interpolated points would overestimate it (it was
0.5576 instead of 0.5156 on SCIENCE.md's tie/missing vector); a straight line between the original points
would give 0.7525. The interpolated points (one per true positive gained) are kept for plotting only.

Precision convention on the PR plane (:data:`PRECISION_CONVENTION`): the curves and the binary points both
use TP/(TP+FP) with every predicted non-reference pair a false positive — the classifier view of SCIENCE.md
§7, whose random baseline is P/(P+N). The tables' PPV, TP/(TP+FP−ε), is CompaRNA's and differs from it by
the compatible false positives ε.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from comparna.rna.structure import Structure

INTERPOLATION = (
    "Davis-Goadrich non-linear interpolation; AUC = exact integral of the interpolated curve "
    "(closed form per segment)"
)
#: The one precision used on PR plots, for curves and binary points alike (stated on the pages).
PRECISION_CONVENTION = (
    "precision = TP/(TP+FP), every predicted non-reference pair counted as a false positive "
    "(classifier over all candidate pairs i<j, baseline P/(P+N)); the tables' PPV = TP/(TP+FP-compatible)"
)


@dataclass(frozen=True)
class PRInput:
    """What a PR curve needs, without the L² candidates.

    Attributes
    ----------
    scores : numpy.ndarray
        Scores (> 0) of the reported candidate pairs.
    labels : numpy.ndarray
        bool, whether each reported pair is a reference pair.
    positives : int
        P, the number of reference pairs (reported or not).
    candidates : int
        P + N, all candidate pairs i < j (L(L−1)/2 per target, summed when pooled).
    """

    scores: np.ndarray
    labels: np.ndarray
    positives: int
    candidates: int

    def __post_init__(self) -> None:
        if self.scores.shape != self.labels.shape:
            raise ValueError("scores and labels differ in shape")
        if int(self.labels.sum()) > self.positives or self.scores.size > self.candidates:
            raise ValueError("more reported positives or pairs than exist")
        if self.positives > self.candidates:
            raise ValueError("more positives than candidate pairs")

    @property
    def baseline(self) -> float:
        """Precision of a random classifier, P/(P+N)."""
        return self.positives / self.candidates if self.candidates else float("nan")


def pr_input(reference: Structure, probabilities: Mapping[tuple[int, int], float]) -> PRInput:
    """PR input of one target from its reference structure and a method's base-pair probabilities.

    Parameters
    ----------
    reference : Structure
        The reference (positives = its pairs).
    probabilities : mapping (i, j) -> float
        1-based pairs i < j with their probability or score (>= 0); absent pairs score 0.

    Raises
    ------
    ValueError
        A pair outside 1 <= i < j <= L, or a negative or non-finite score.
    """
    length = reference.length
    scores = np.fromiter(probabilities.values(), dtype=np.float64, count=len(probabilities))
    pairs = np.array(list(probabilities.keys()), dtype=np.int64).reshape(-1, 2)
    if pairs.size:
        bad = (pairs[:, 0] < 1) | (pairs[:, 0] >= pairs[:, 1]) | (pairs[:, 1] > length)
        if bad.any():
            i, j = pairs[int(np.argmax(bad))]
            raise ValueError(f"pair ({i}, {j}) is not a candidate pair 1 <= i < j <= {length}")
    if not np.all(np.isfinite(scores)) or (scores < 0).any():
        raise ValueError("scores must be finite and non-negative")
    keep = scores > 0
    ref = reference.pairs
    labels = np.array([(int(i), int(j)) in ref for i, j in pairs[keep]], dtype=bool)
    return PRInput(scores[keep], labels, len(ref), length * (length - 1) // 2)


def pool(inputs: Iterable[PRInput]) -> PRInput:
    """One input over several targets: candidates of all targets ranked together by score."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("nothing to pool")
    return PRInput(
        np.concatenate([x.scores for x in inputs]),
        np.concatenate([x.labels for x in inputs]),
        sum(x.positives for x in inputs),
        sum(x.candidates for x in inputs),
    )


@dataclass(frozen=True)
class PRCurve:
    """A precision-recall curve.

    Attributes
    ----------
    thresholds, tp, fp : numpy.ndarray
        The PR points before interpolation: at each distinct score threshold (decreasing, ending with 0 when
        unreported pairs exist), the counts of pairs scoring at least the threshold.
    recall, precision : numpy.ndarray
        The interpolated curve from recall 0 to 1, one point per true positive gained (for plotting).
    auc : float
        Exact area under the interpolated curve (:func:`dg_auc`).
    baseline : float
        P/(P+N).
    interpolation : str
    """

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    recall: np.ndarray
    precision: np.ndarray
    auc: float
    baseline: float
    interpolation: str = INTERPOLATION


def pr_points(inp: PRInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thresholds, TP, FP) at every distinct score, decreasing, the unreported pairs as a last block at 0."""
    order = np.argsort(-inp.scores, kind="stable")
    scores = inp.scores[order]
    labels = inp.labels[order]
    tp = np.cumsum(labels, dtype=np.int64)
    fp = np.arange(1, scores.size + 1, dtype=np.int64) - tp
    last_of_group = np.ones(scores.size, dtype=bool)
    last_of_group[:-1] = scores[1:] != scores[:-1]
    thresholds, tp, fp = scores[last_of_group], tp[last_of_group], fp[last_of_group]
    negatives = inp.candidates - inp.positives
    if inp.scores.size < inp.candidates:  # the zero-score block of unreported pairs
        thresholds = np.append(thresholds, 0.0)
        tp = np.append(tp, inp.positives)
        fp = np.append(fp, negatives)
    return thresholds, tp, fp


def interpolate(tp: np.ndarray, fp: np.ndarray, positives: int) -> tuple[np.ndarray, np.ndarray]:
    """Davis-Goadrich interpolation through PR points given as cumulative (TP, FP), in threshold order.

    Returns
    -------
    (recall, precision)
        Starting at recall 0; one point per true positive gained plus one per vertical (FP-only) step.
    """
    if positives <= 0:
        raise ValueError("a PR curve needs at least one positive")
    tp_a = np.concatenate([[0], tp[:-1]]).astype(np.float64)
    fp_a = np.concatenate([[0], fp[:-1]]).astype(np.float64)
    d_tp = tp - tp_a
    d_fp = fp - fp_a
    steps = np.where(d_tp > 0, d_tp, 1).astype(np.int64)
    segment = np.repeat(np.arange(tp.size), steps)
    x = np.arange(segment.size) - np.repeat(np.cumsum(steps) - steps, steps) + 1.0
    rising = d_tp[segment] > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(d_tp > 0, d_fp / np.where(d_tp > 0, d_tp, 1), 0.0)
        cur_tp = np.where(rising, tp_a[segment] + x, tp[segment])
        cur_fp = np.where(rising, fp_a[segment] + x * slope[segment], fp[segment])
        precision = np.where(cur_tp + cur_fp > 0, cur_tp / (cur_tp + cur_fp), 0.0)
    recall = cur_tp / positives
    start = precision[0] if tp[0] > 0 else 0.0
    return np.concatenate([[0.0], recall]), np.concatenate([[start], precision])


def segment_areas(tp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Area under each Davis-Goadrich segment, in units of one true positive (divide by P for recall).

    Parameters
    ----------
    tp, fp : numpy.ndarray
        Cumulative counts at the PR points in threshold order (:func:`pr_points`); the first segment starts
        at the origin (0, 0).

    Returns
    -------
    numpy.ndarray
        ``∫_0^ΔTP (TP_A + x) / (TP_A + FP_A + x·(1 + ΔFP/ΔTP)) dx`` per segment (Davis & Goadrich 2006 with x
        continuous); 0 for vertical steps (ΔTP = 0).

    Notes
    -----
    Writing a = TP_A, b = TP_A + FP_A, c = 1 + ΔFP/ΔTP, the integrand is 1/c + (a − b/c)/(b + c·x), whose
    integral over [0, ΔTP] is ΔTP/c + (a − b/c)/c · ln(1 + c·ΔTP/b). With c·ΔTP = ΔTP + ΔFP and
    (a − b/c)/c = k·ΔTP/(ΔTP + ΔFP)², k = TP_A·ΔFP − FP_A·ΔTP, this is the closed form in the module
    docstring; k is computed in integers. When b = 0 (the segment from the origin) a = 0 and k = 0: the
    precision is constant and only ΔTP/c remains.
    """
    tp = np.asarray(tp, dtype=np.int64)
    fp = np.asarray(fp, dtype=np.int64)
    tp_a = np.concatenate([[0], tp[:-1]])
    fp_a = np.concatenate([[0], fp[:-1]])
    d_tp, d_fp = tp - tp_a, fp - fp_a
    rising = d_tp > 0
    if np.any(d_tp < 0) or np.any(d_fp < 0):
        raise ValueError("PR points must be cumulative counts in threshold order")
    width = np.where(rising, d_tp + d_fp, 1).astype(np.float64)
    k = (tp_a * d_fp - fp_a * d_tp).astype(np.float64)
    start = (tp_a + fp_a).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_term = np.where(start > 0, np.log1p(width / np.where(start > 0, start, 1.0)), 0.0)
    area = d_tp * d_tp / width + k * d_tp / (width * width) * log_term
    return np.where(rising, area, 0.0)


def dg_auc(tp: np.ndarray, fp: np.ndarray, positives: int) -> float:
    """Exact AUC-PR under the Davis-Goadrich interpolated curve through cumulative (TP, FP) points.

    Parameters
    ----------
    tp, fp : numpy.ndarray
        Cumulative counts in threshold order, ending at TP = ``positives`` for a full curve.
    positives : int
        P.
    """
    if positives <= 0:
        raise ValueError("a PR curve needs at least one positive")
    # math.fsum: the sum of many small segment areas stays exact to the last bit
    return math.fsum(segment_areas(tp, fp).tolist()) / positives


def pr_curve(inp: PRInput) -> PRCurve:
    """The interpolated PR curve and AUC-PR of one target or of a pooled set (:func:`pool`)."""
    thresholds, tp, fp = pr_points(inp)
    recall, precision = interpolate(tp, fp, inp.positives)
    return PRCurve(thresholds, tp, fp, recall, precision, dg_auc(tp, fp, inp.positives), inp.baseline)


def pr_point(tp: int, fn: int, fp: int) -> tuple[float, float]:
    """(recall, precision) of a binary prediction, a single point on the PR plane.

    Same convention as the curves (:data:`PRECISION_CONVENTION`): every predicted non-reference pair is a
    false positive, compatible ones included, so points and curves are comparable. This differs from the
    tables' PPV = TP/(TP+FP−ε). Precision of an empty prediction is 0 by convention.
    """
    recall = tp / (tp + fn) if tp + fn else 0.0
    precision = tp / (tp + fp) if tp + fp else 0.0
    return recall, precision
