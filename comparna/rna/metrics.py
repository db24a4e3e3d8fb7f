"""Base-pair counts and the scores derived from them (SCIENCE.md §2).

Counts follow CompaRNA (Puton et al., NAR 2013, after Gardner & Giegerich, BMC Bioinformatics 2004):
TP, FN, FP with FP split into *inconsistent*, *contradicting* and *compatible* (ε) kinds, and TN over all
L(L−1)/2 candidate pairs i < j. Compatible false positives are neutral:

    Sensitivity = TP / (TP + FN)
    PPV         = TP / (TP + FP − ε)
    MCC         = (TP·TN − (FP−ε)·FN) / sqrt((TP+FP−ε)(TP+FN)(TN+FP−ε)(TN+FN)),  0 when the denominator is 0
    F1          = 2·Sens·PPV / (Sens + PPV),                                       0 when both are 0

Every score is derived from stored counts; pooled ("per-residue") scores sum counts first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

from comparna.rna.structure import Structure, StructureFormatError, crosses

__all__ = [
    "CONVENTION",
    "PairCounts",
    "count_pairs",
    "pool_counts",
    "score_counts",
    "sensitivity",
    "ppv",
    "mcc",
    "f1",
    "mcc_from_arrays",
    "slipped_matches",
]


#: Label of the counting convention, to be stored with every result (SCIENCE.md: record the convention).
CONVENTION = (
    "comparna2013: TN=L(L-1)/2-TP-FP-FN; FP split inconsistent>contradicting>compatible; "
    "PPV=TP/(TP+FP-compatible)"
)


def _div(a: float, b: float) -> float:
    return a / b if b else 0.0


def sensitivity(tp: int, fn: int) -> float:
    """TP / (TP + FN); 0 when there are no reference pairs."""
    return _div(tp, tp + fn)


def ppv(tp: int, fp: int, fp_compatible: int = 0) -> float:
    """TP / (TP + FP − ε), ε = compatible false positives (Puton et al. 2013); 0 on a zero denominator."""
    return _div(tp, tp + fp - fp_compatible)


def mcc(tp: int, fn: int, fp: int, fp_compatible: int, tn: int) -> float:
    """Matthews correlation with compatible FPs removed (Puton et al. 2013); 0 on a zero denominator."""
    fpx = fp - fp_compatible
    den = (tp + fpx) * (tp + fn) * (tn + fpx) * (tn + fn)
    if den <= 0:
        return 0.0
    # Integer numerator, float only for the square root: exact for any realistic count sizes.
    return (tp * tn - fpx * fn) / math.sqrt(den)


def f1(sens: float, prec: float) -> float:
    """Harmonic mean 2·Sens·PPV / (Sens + PPV); 0 when both are 0."""
    return _div(2 * sens * prec, sens + prec)


@dataclass(frozen=True)
class PairCounts:
    """Base-pair counts of one prediction against one reference, or pooled over several.

    Parameters
    ----------
    tp, fn, fp : int
        True positives, false negatives, false positives.
    fp_inconsistent, fp_contradicting, fp_compatible : int
        The split of ``fp`` (tested in this order, SCIENCE.md §2); they sum to ``fp``.
    tn : int
        True negatives, L(L−1)/2 − TP − FP − FN.
    """

    tp: int
    fn: int
    fp: int
    fp_inconsistent: int
    fp_contradicting: int
    fp_compatible: int
    tn: int

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(f"negative count {f.name}={getattr(self, f.name)}")
        if self.fp_inconsistent + self.fp_contradicting + self.fp_compatible != self.fp:
            raise ValueError(
                f"FP split {self.fp_inconsistent}+{self.fp_contradicting}+{self.fp_compatible}"
                f" != fp {self.fp}"
            )

    @classmethod
    def zero(cls) -> PairCounts:
        return cls(0, 0, 0, 0, 0, 0, 0)

    def __add__(self, other: PairCounts) -> PairCounts:
        if not isinstance(other, PairCounts):
            return NotImplemented
        return PairCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __radd__(self, other: object) -> PairCounts:
        # Lets sum(counts) work with its default start of 0.
        if other == 0:
            return self
        return NotImplemented

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def sensitivity(self) -> float:
        return sensitivity(self.tp, self.fn)

    @property
    def ppv(self) -> float:
        return ppv(self.tp, self.fp, self.fp_compatible)

    @property
    def mcc(self) -> float:
        return mcc(self.tp, self.fn, self.fp, self.fp_compatible, self.tn)

    @property
    def f1(self) -> float:
        return f1(self.sensitivity, self.ppv)


def pool_counts(counts: Iterable[PairCounts]) -> PairCounts:
    """Sum counts over targets ("per-residue" pooling, Puton et al. 2013); zero counts for no targets."""
    total = PairCounts.zero()
    for c in counts:
        total = total + c
    return total


def score_counts(counts: PairCounts) -> dict[str, float]:
    """The scores of ``counts``: ``{"sensitivity", "ppv", "mcc", "f1"}``."""
    return {"sensitivity": counts.sensitivity, "ppv": counts.ppv, "mcc": counts.mcc, "f1": counts.f1}


def mcc_from_arrays(tp, fn, fp, fp_compatible, tn) -> np.ndarray:
    """Vectorised :func:`mcc` over numpy arrays (e.g. bootstrap replicates of pooled counts).

    Parameters
    ----------
    tp, fn, fp, fp_compatible, tn : array_like
        Broadcastable count arrays.

    Returns
    -------
    numpy.ndarray of float64
        MCC per element, 0 where the denominator is 0.
    """
    tp, fn, fp, eps, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fn, fp, fp_compatible, tn))
    fpx = fp - eps
    den = (tp + fpx) * (tp + fn) * (tn + fpx) * (tn + fn)
    num = tp * tn - fpx * fn
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    ok = den > 0
    np.divide(num, np.sqrt(np.where(ok, den, 1.0)), out=out, where=ok)
    return out


# --------------------------------------------------------------------------------------------------------
# counting


def _slip_neighbours(i: int, j: int) -> tuple[tuple[int, int], ...]:
    return ((i, j), (i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1))


def slipped_matches(reference: Structure, prediction: Structure) -> tuple[set, set]:
    """Pairs matched under slippage (Mathews et al., JMB 1999): (i, j) is matched when the other structure
    has (i, j), (i±1, j) or (i, j±1).

    Returns
    -------
    (set, set)
        Matched reference pairs (for sensitivity) and matched predicted pairs (for PPV).
    """
    ref_matched = {p for p in reference.pairs if any(q in prediction.pairs for q in _slip_neighbours(*p))}
    pred_matched = {p for p in prediction.pairs if any(q in reference.pairs for q in _slip_neighbours(*p))}
    return ref_matched, pred_matched


def count_pairs(reference: Structure, prediction: Structure, *, slip: bool = False) -> PairCounts:
    """Count TP, FN, FP (split) and TN of ``prediction`` against ``reference`` (SCIENCE.md §2).

    An FP pair (i, j) is *inconsistent* if i or j is paired (necessarily with another partner) in the
    reference; else *contradicting* if it crosses a reference pair; else *compatible*. Multiplets and
    pseudoknots are allowed on both sides.

    Parameters
    ----------
    reference, prediction : Structure
        Structures of the same length.
    slip : bool
        Slippage mode (Mathews et al., JMB 1999): a pair is correct when the other structure has
        (i, j), (i±1, j) or (i, j±1). Mapping onto the counts: ``tp`` = reference pairs matched by some
        predicted pair and ``fn`` = reference pairs not matched (so sensitivity is exactly the
        reference-side slipped sensitivity); ``fp`` = predicted pairs not matched by any reference pair,
        split as above. Hence ``TP + FN = |R|`` and ``FP = |P| − (prediction-side matches)``. PPV computed
        from these counts uses the reference-side match count in the numerator; it equals the
        prediction-side slipped PPV whenever slippage matching is one-to-one (the usual case) and differs
        when one predicted pair matches two reference pairs or vice versa. Use :func:`slipped_matches`
        for the exact prediction-side figure. Results of this mode must be labelled as such.

    Returns
    -------
    PairCounts

    Raises
    ------
    StructureFormatError
        If the structures have different lengths.
    """
    if reference.length != prediction.length:
        raise StructureFormatError(
            f"reference length {reference.length} differs from prediction length {prediction.length}"
        )
    R, P = reference.pairs, prediction.pairs
    if slip:
        ref_matched, pred_matched = slipped_matches(reference, prediction)
        tp = len(ref_matched)
        fn = len(R) - tp
        false = [p for p in P if p not in pred_matched]
    else:
        tp = len(R & P)
        fn = len(R) - tp
        false = [p for p in P if p not in R]
    paired = {x for p in R for x in p}
    inconsistent = 0
    rest = []
    for i, j in false:
        if i in paired or j in paired:
            inconsistent += 1
        else:
            rest.append((i, j))
    contradicting = int(crosses(reference, rest).sum())
    fp = len(false)
    L = reference.length
    tn = L * (L - 1) // 2 - tp - fp - fn
    return PairCounts(
        tp=tp,
        fn=fn,
        fp=fp,
        fp_inconsistent=inconsistent,
        fp_contradicting=contradicting,
        fp_compatible=len(rest) - contradicting,
        tn=tn,
    )
