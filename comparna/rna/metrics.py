"""Base-pair counts and the scores derived from them (SCIENCE.md §2).

Counts follow CompaRNA (Puton et al., NAR 2013, after Gardner & Giegerich, BMC Bioinformatics 2004):
TP, FN, FP with FP split into *inconsistent*, *contradicting* and *compatible* (ε) kinds, and TN over all
L(L−1)/2 candidate pairs i < j. Compatible false positives are neutral:

    Sensitivity = TP / (TP + FN)
    PPV         = TP / (TP + FP − ε)
    MCC         = (TP·TN − (FP−ε)·FN) / sqrt((TP+FP−ε)(TP+FN)(TN+FP−ε)(TN+FN)),  0 when the denominator is 0
    F1          = 2·Sens·PPV / (Sens + PPV),                                       0 when both are 0

Every score is derived from stored counts; pooled ("per-residue") scores sum counts first.

Slippage mode (Mathews et al., JMB 1999; SCIENCE.md §2) matches a pair when the other structure has (i, j),
(i±1, j) or (i, j±1), from the reference side for sensitivity and from the prediction side for PPV. One
predicted pair can match two reference pairs (or the reverse), so the two sides have their own true-positive
count (:class:`SlippedCounts`): TP_ref (reference pairs with a slipped match) and TP_pred (predicted pairs
with one), FP = |P| − TP_pred, FN = |R| − TP_ref, and **[convention]**

    Sensitivity = TP_ref / (TP_ref + FN)
    PPV         = TP_pred / (TP_pred + FP − ε)
    MCC         = (√(TP_ref·TP_pred)·TN − (FP−ε)·FN) / sqrt((TP_pred+FP−ε)(TP_ref+FN)(TN+FP−ε)(TN+FN))

the MCC being √(PPV·Sens·Spec·NPV) − √((1−PPV)(1−Sens)(1−Spec)(1−NPV)) — an identity of MCC for one
confusion matrix — with each factor taken from its own side; it is the ordinary MCC when TP_ref = TP_pred.
TN = L(L−1)/2 − TP_ref − FP − FN as without slippage. :data:`SLIP_CONVENTION` records this.

Speed: :func:`count_pairs` keeps per-reference look-up tables (paired positions, range-min/max sparse tables
for crossings) in a small cache, so scoring many predictions against one reference pays for them once; the
vectorised :mod:`comparna.rna.metrics_batch` scores whole batches.
"""

from __future__ import annotations

import array
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

from comparna.rna.structure import Structure, StructureFormatError

__all__ = [
    "CONVENTION",
    "SLIP_CONVENTION",
    "COUNT_NAMES",
    "convention",
    "PairCounts",
    "SlippedCounts",
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
#: Added to :data:`CONVENTION` for results of slippage mode.
SLIP_CONVENTION = (
    "slip (Mathews 1999): (i,j) matched by (i,j),(i+-1,j),(i,j+-1) of the other structure; "
    "Sens=TPref/(TPref+FN) [reference pairs matched], PPV=TPpred/(TPpred+FP-compatible) [predicted pairs "
    "matched], FP=|P|-TPpred, TN=L(L-1)/2-TPref-FP-FN, "
    "MCC=(sqrt(TPref*TPpred)*TN-(FP-compatible)*FN)/sqrt((TPpred+FP-compatible)(TPref+FN)(TN+FP-compatible)(TN+FN))"
)
#: The seven stored counts, in storage order.
COUNT_NAMES: tuple[str, ...] = (
    "tp", "fn", "fp", "fp_inconsistent", "fp_contradicting", "fp_compatible", "tn"
)


def convention(*, slip: bool = False) -> str:
    """The convention label of a result (SCIENCE.md: record it with every result)."""
    return f"{CONVENTION}; {SLIP_CONVENTION}" if slip else CONVENTION


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
        # min() over the plain attributes first: the common, valid case costs one call, not a loop
        if min(self.tp, self.fn, self.fp, self.fp_inconsistent, self.fp_contradicting, self.fp_compatible,
               self.tn) < 0:
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
        if type(other) is not type(self):
            raise TypeError("cannot pool slipped and exact counts")
        return type(self)(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __radd__(self, other: object) -> PairCounts:
        # Lets sum(counts) work with its default start of 0.
        if other == 0:
            return self
        return NotImplemented

    def as_dict(self) -> dict[str, int]:
        """The seven stored counts (:data:`COUNT_NAMES`); a slipped count's ``tp_predicted`` is apart."""
        return {name: getattr(self, name) for name in COUNT_NAMES}

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


@dataclass(frozen=True)
class SlippedCounts(PairCounts):
    """Counts in slippage mode: ``tp`` is TP_ref, ``tp_predicted`` TP_pred (see the module docstring).

    Parameters
    ----------
    tp_predicted : int
        Predicted pairs with a slipped match in the reference; ``fp`` = predicted pairs − ``tp_predicted``.
    """

    tp_predicted: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tp_predicted < 0:
            raise ValueError(f"negative count tp_predicted={self.tp_predicted}")

    @property
    def ppv(self) -> float:
        """Prediction-side slipped PPV, TP_pred / (TP_pred + FP − ε)."""
        return ppv(self.tp_predicted, self.fp, self.fp_compatible)

    @property
    def mcc(self) -> float:
        """MCC from the reference-side sensitivity and the prediction-side PPV (module docstring)."""
        fpx = self.fp - self.fp_compatible
        den = (self.tp_predicted + fpx) * (self.tp + self.fn) * (self.tn + fpx) * (self.tn + self.fn)
        if den <= 0:
            return 0.0
        return (math.sqrt(self.tp * self.tp_predicted) * self.tn - fpx * self.fn) / math.sqrt(den)


def pool_counts(counts: Iterable[PairCounts]) -> PairCounts:
    """Sum counts over targets ("per-residue" pooling, Puton et al. 2013); zero counts for no targets.

    Slipped counts pool into slipped counts (both true-positive counts summed); mixing them with exact
    counts raises ``TypeError``.
    """
    total: PairCounts | None = None
    for c in counts:
        total = c if total is None else total + c
    return PairCounts.zero() if total is None else total


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
    R, P = reference.pairs, prediction.pairs
    ref_matched = {p for p in R if any(q in P for q in _slip_neighbours(*p))}
    pred_matched = {p for p in P if any(q in R for q in _slip_neighbours(*p))}
    return ref_matched, pred_matched


@dataclass(frozen=True)
class _ReferenceTables:
    """What counting needs from a reference, built once per reference (:func:`_tables`).

    ``left[k][x]`` / ``right[k][x]`` are the minimum / maximum over positions x .. x + 2**k − 1 of the
    farthest partner to the left / right (the position itself when unpaired): sparse tables for O(1)
    range-min/max queries (Bender & Farach-Colton, LATIN 2000), kept as ``array.array`` (int32) because
    single look-ups there are several times faster than numpy scalar indexing, at 4 bytes per entry.
    """

    paired: frozenset[int]
    left: tuple[array.array, ...]
    right: tuple[array.array, ...]


@functools.lru_cache(maxsize=64)  # <= 64 x 0.3 MB for 3000-nt references
def _tables(reference: Structure) -> _ReferenceTables:
    # keyed by value: a Structure hashes its (length, frozenset) — the frozenset caches its hash — so the
    # same reference loaded again (another prediction of the target) finds its tables.
    L = reference.length
    far_right = np.arange(L + 2, dtype=np.int32)
    far_left = np.arange(L + 2, dtype=np.int32)
    if reference.pairs:
        ref = np.fromiter(
            (x for p in reference.pairs for x in p), dtype=np.int64, count=2 * len(reference.pairs)
        ).reshape(-1, 2)
        np.maximum.at(far_right, ref[:, 0], ref[:, 1])
        np.minimum.at(far_left, ref[:, 1], ref[:, 0])
    left, right = [far_left], [far_right]
    span = 1
    while 2 * span <= L + 2:
        left.append(np.minimum(left[-1][:-span], left[-1][span:]))
        right.append(np.maximum(right[-1][:-span], right[-1][span:]))
        span *= 2
    return _ReferenceTables(
        frozenset(x for p in reference.pairs for x in p),
        tuple(array.array("i", a.tobytes()) for a in left),
        tuple(array.array("i", a.tobytes()) for a in right),
    )


def _split_false(tables: _ReferenceTables, false: Iterable[tuple[int, int]]) -> tuple[int, int, int]:
    """(inconsistent, contradicting, compatible) among false positive pairs (SCIENCE.md §2, in this order).

    A pair whose ends are both unpaired in the reference crosses a reference pair exactly when some position
    strictly inside it has a partner strictly outside it: a range-min/max query over the inside.
    """
    paired, left, right = tables.paired, tables.left, tables.right
    inconsistent = contradicting = compatible = 0
    for i, j in false:
        if i in paired or j in paired:
            inconsistent += 1
            continue
        lo, hi = i + 1, j - 1
        if hi >= lo:
            k = (hi - lo + 1).bit_length() - 1
            lk, rk = left[k], right[k]
            hi2 = hi - (1 << k) + 1
            if lk[lo] < i or lk[hi2] < i or rk[lo] > j or rk[hi2] > j:
                contradicting += 1
                continue
        compatible += 1
    return inconsistent, contradicting, compatible


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
        (i, j), (i±1, j) or (i, j±1). Returns :class:`SlippedCounts`: ``tp`` = reference pairs matched by
        some predicted pair and ``fn`` = reference pairs not matched (the reference-side slipped
        sensitivity); ``tp_predicted`` = predicted pairs matched by some reference pair and ``fp`` = the
        others, split as above (the prediction-side slipped PPV). ``TP + FN = |R|`` and
        ``tp_predicted + FP = |P|``. Results of this mode must be labelled as such
        (:func:`convention`).

    Returns
    -------
    PairCounts
        :class:`SlippedCounts` in slippage mode.

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
    L = reference.length
    tables = _tables(reference)
    if slip:
        ref_matched, pred_matched = slipped_matches(reference, prediction)
        tp = len(ref_matched)
        inconsistent, contradicting, compatible = _split_false(tables, P - pred_matched)
        fp = inconsistent + contradicting + compatible
        fn = len(R) - tp
        return SlippedCounts(
            tp, fn, fp, inconsistent, contradicting, compatible, L * (L - 1) // 2 - tp - fp - fn,
            tp_predicted=len(pred_matched),
        )
    false = P - R
    tp = len(P) - len(false)
    fn = len(R) - tp
    inconsistent, contradicting, compatible = _split_false(tables, false)
    fp = len(false)
    return PairCounts(tp, fn, fp, inconsistent, contradicting, compatible, L * (L - 1) // 2 - tp - fp - fn)
