"""Vectorised base-pair counts and scores of many predictions at once (SCIENCE.md §2; issue 19 item 3).

The definitions are exactly those of :func:`comparna.rna.metrics.count_pairs` (and its slippage mode); this
module evaluates them for a whole batch — typically every prediction of every target of a dataset against
its reference — in a fixed number of numpy passes instead of one Python call per prediction:

- all references' pairs live in flat arrays, their positions laid end to end (target t's position x at
  ``offset[t] + x``), each position with its smallest and largest reference partner, so matching a
  predicted pair is two gathers (a binary search over pair keys only for positions in three or more pairs);
- a false positive is *inconsistent* when one of its ends is paired in the reference (a boolean array over
  the positions); otherwise *contradicting* when some position strictly inside it has a reference partner
  strictly outside it: a range minimum of the farthest left partner and a range maximum of the farthest
  right partner over the inside, answered by sparse tables in O(1) per pair (Bender & Farach-Colton,
  LATIN 2000) after O(N log L) set-up for N positions;
- the four scores are computed from the integer counts with the same floating-point operations as the
  scalar functions (products of exact integers below 2**53, one rounding per operation), so they are
  **bit-identical** to :func:`comparna.rna.metrics.score_counts`.

Inputs are either :class:`~comparna.rna.structure.Structure` objects or the stored canonical texts
(``"i-j i-j ..."``, :mod:`comparna.rna.canonical`), which are parsed straight into arrays
(:mod:`comparna.rna.pair_arrays`). The front ends :func:`score_structures` and :func:`score_texts` work in
chunks of about :data:`CHUNK_PAIRS` predicted pairs so that the arrays stay in cache.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from comparna.rna.metrics import COUNT_NAMES, PairCounts, SlippedCounts
from comparna.rna.pair_arrays import PairArrays, group_sums, pairs_of_structures, pairs_of_texts
from comparna.rna.structure import Structure, StructureFormatError

__all__ = [
    "PairArrays",
    "BatchCounts",
    "pairs_of_structures",
    "pairs_of_texts",
    "count_batch",
    "score_batch",
    "score_structures",
    "score_texts",
]


@dataclass(frozen=True)
class BatchCounts:
    """Counts of a batch of comparisons.

    Attributes
    ----------
    counts : numpy.ndarray
        int64 (n, 7) in :data:`comparna.rna.metrics.COUNT_NAMES` order.
    tp_predicted : numpy.ndarray or None
        int64 (n,), predicted pairs with a slipped match (slippage mode only).
    """

    counts: np.ndarray
    tp_predicted: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    def column(self, name: str) -> np.ndarray:
        return self.counts[:, COUNT_NAMES.index(name)]

    def pair_counts(self) -> list[PairCounts]:
        """The rows as :class:`PairCounts` (:class:`SlippedCounts` in slippage mode)."""
        rows = self.counts.tolist()
        if self.tp_predicted is None:
            return [PairCounts(*r) for r in rows]
        tpp = self.tp_predicted.tolist()
        return [SlippedCounts(*r, tp_predicted=t) for r, t in zip(rows, tpp, strict=True)]


# ------------------------------------------------------------------------------------------------- counts
def _sparse_table(values: np.ndarray, op, levels: int) -> np.ndarray:
    """``table[k, x] = op(values[x : x + 2**k])`` (clipped at the end), as one (levels, n) array."""
    table = np.empty((levels, values.size), dtype=values.dtype)
    table[0] = values
    span = 1
    for k in range(1, levels):
        op(table[k - 1, :-span], table[k - 1, span:], out=table[k, :-span])
        table[k, -span:] = table[k - 1, -span:]
        span *= 2
    return table


def _range_query(table: np.ndarray, op, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """op over values[lo..hi] (inclusive, lo <= hi) for arrays of ranges: two overlapping blocks of 2**k."""
    k = np.frexp((hi - lo + 1).astype(np.float64))[1] - 1  # floor(log2(span)), exact for integers
    flat = table.ravel()
    row = k.astype(np.int64) * table.shape[1]
    return op(flat[row + lo], flat[row + hi - (np.int64(1) << k) + 1])


class _PairLookup:
    """Membership of pairs (global position of i, local j) in a set of pairs laid out by position.

    Each position keeps its smallest and largest partner; a position with at most two partners is then
    answered exactly by two gathers. Positions in three or more pairs (rare multiplets) are answered by a
    binary search over the keys of their pairs only.
    """

    def __init__(self, at_i: np.ndarray, at_j: np.ndarray, i: np.ndarray, j: np.ndarray, total: int,
                 dtype) -> None:
        ends = np.concatenate([at_i, at_j])
        partner = np.concatenate([j, i]).astype(dtype)
        self.low = np.full(total, np.iinfo(dtype).max, dtype=dtype)
        self.high = np.full(total, -1, dtype=dtype)
        np.minimum.at(self.low, ends, partner)
        np.maximum.at(self.high, ends, partner)
        self.width = int(np.iinfo(dtype).max) + 1
        degree = np.bincount(ends, minlength=total) if ends.size else np.zeros(total, dtype=np.int64)
        self.crowded = degree > 2
        if self.crowded.any():
            keys = np.concatenate([at_i * self.width + j, at_j * self.width + i])
            self.keys = np.sort(keys[self.crowded[ends]])
        else:
            self.crowded = None
            self.keys = None

    def contains(self, at: np.ndarray, partner: np.ndarray) -> np.ndarray:
        """Whether the position ``at`` (global) is paired with ``partner`` (local)."""
        hit = (self.low[at] == partner) | (self.high[at] == partner)
        if self.crowded is not None:
            slow = np.flatnonzero(self.crowded[at])
            if slow.size:
                key = at[slow] * self.width + partner[slow]
                where = np.minimum(np.searchsorted(self.keys, key), self.keys.size - 1)
                hit[slow] = self.keys[where] == key
        return hit


def _block_offsets(lengths: np.ndarray) -> np.ndarray:
    """Start of each structure's positions 0 .. L+1 when laid end to end."""
    return np.concatenate([[0], np.cumsum(lengths + 2)[:-1]]).astype(np.int64)


def count_batch(references: PairArrays, predictions: PairArrays, case_reference: Sequence[int] | np.ndarray,
                *, slip: bool = False) -> BatchCounts:
    """Counts of every prediction against its reference (SCIENCE.md §2), vectorised.

    Parameters
    ----------
    references : PairArrays
        The distinct references.
    predictions : PairArrays
        One structure per comparison.
    case_reference : array_like of int
        For each prediction, the index of its reference in ``references``.
    slip : bool
        Slippage mode, as :func:`comparna.rna.metrics.count_pairs` (``tp`` from the reference side,
        ``tp_predicted`` and ``fp`` from the prediction side).

    Raises
    ------
    StructureFormatError
        A prediction whose length differs from its reference's.
    """
    case_ref = np.asarray(case_reference, dtype=np.int64)
    n = predictions.size
    if case_ref.shape != (n,):
        raise ValueError("one reference index per prediction")
    if n and (case_ref.min() < 0 or case_ref.max() >= references.size):
        raise ValueError("reference index out of range")
    ref_len = references.lengths
    differs = ref_len[case_ref] != predictions.lengths
    if differs.any():
        c = int(np.argmax(differs))
        raise StructureFormatError(
            f"prediction {c}: length {int(predictions.lengths[c])} differs from its reference's "
            f"{int(ref_len[case_ref[c]])}"
        )
    # positions of reference t at offset[t] + x, x = 0 .. L+1 (0 and L+1 hold no pair: slipped pairs
    # (i-1, j), (i, j+1) stay inside the block)
    offset = _block_offsets(ref_len)
    total = int((ref_len + 2).sum())
    longest = int(ref_len.max()) + 2 if references.size else 2
    small = np.int16 if longest < 2**15 else np.int32  # narrow tables: less memory traffic
    r_at_i = offset[references.owner] + references.i
    r_at_j = offset[references.owner] + references.j
    reference_pairs = _PairLookup(r_at_i, r_at_j, references.i, references.j, total, small)

    p_block = offset[case_ref]
    p_base = p_block[predictions.owner]
    p_at_i = p_base + predictions.i
    p_at_j = p_base + predictions.j
    ref_sizes = references.sizes()
    if not slip:
        matched = reference_pairs.contains(p_at_i, predictions.j)
        tp = predictions.per_structure(matched)
        tp_predicted = None
        fn = ref_sizes[case_ref] - tp
    else:
        # prediction side: (i, j), (i±1, j) or (i, j±1) in the reference
        matched = reference_pairs.contains(p_at_i, predictions.j)
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            matched |= reference_pairs.contains(p_at_i + di, predictions.j + dj)
        tp_predicted = predictions.per_structure(matched)
        # reference side: every case's reference pairs against that case's predicted pairs
        case_offset = _block_offsets(predictions.lengths)
        c_at_i = case_offset[predictions.owner] + predictions.i
        c_at_j = case_offset[predictions.owner] + predictions.j
        case_total = int((predictions.lengths + 2).sum())
        predicted_pairs = _PairLookup(c_at_i, c_at_j, predictions.i, predictions.j, case_total, small)
        per_case = ref_sizes[case_ref]
        starts = np.concatenate([[0], np.cumsum(ref_sizes)[:-1]])
        case_of = np.repeat(np.arange(n, dtype=np.int64), per_case)
        within = np.arange(case_of.size, dtype=np.int64) - np.repeat(np.cumsum(per_case) - per_case, per_case)
        rows = np.repeat(starts[case_ref], per_case) + within  # rows of references.* (sorted by owner)
        ri, rj = references.i[rows], references.j[rows]
        at = case_offset[case_of] + ri
        ref_hit = predicted_pairs.contains(at, rj)
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            ref_hit |= predicted_pairs.contains(at + di, rj + dj)
        tp = group_sums(ref_hit, np.concatenate([[0], np.cumsum(per_case)]))
        fn = per_case - tp

    false = ~matched
    paired = reference_pairs.high >= 0
    inconsistent = false & (paired[p_at_i] | paired[p_at_j])
    rest = np.flatnonzero(false & ~inconsistent & (predictions.j - predictions.i > 1))
    contradicting_rows = rest[:0]
    if rest.size and references.owner.size:
        # farthest partner to the left / right of every position, the position itself when none
        local = (np.arange(total, dtype=np.int64) - np.repeat(offset, ref_len + 2)).astype(small)
        far_left = np.minimum(local, reference_pairs.low)
        far_right = np.maximum(local, reference_pairs.high)
        span = predictions.j[rest] - predictions.i[rest] - 1
        levels = max(1, int(span.max()).bit_length())
        lo = p_at_i[rest] + 1
        hi = p_at_j[rest] - 1
        leftmost = _range_query(_sparse_table(far_left, np.minimum, levels), np.minimum, lo, hi)
        rightmost = _range_query(_sparse_table(far_right, np.maximum, levels), np.maximum, lo, hi)
        crossing = (leftmost < predictions.i[rest]) | (rightmost > predictions.j[rest])
        contradicting_rows = rest[crossing]
    n_pred = predictions.sizes()
    fp = n_pred - (tp if tp_predicted is None else tp_predicted)
    inc = predictions.per_structure(inconsistent)
    contradicting = np.zeros(false.size, dtype=bool)
    contradicting[contradicting_rows] = True
    con = predictions.per_structure(contradicting)
    comp = fp - inc - con
    L = ref_len[case_ref]
    tn = L * (L - 1) // 2 - tp - fp - fn
    counts = np.stack([tp, fn, fp, inc, con, comp, tn], axis=1).astype(np.int64)
    return BatchCounts(counts, None if tp_predicted is None else tp_predicted.astype(np.int64))


# ------------------------------------------------------------------------------------------------- scores
_EXACT = 2**53


def _score_rows(batch: BatchCounts) -> dict[str, np.ndarray]:
    rows = [(c.sensitivity, c.ppv, c.mcc, c.f1) for c in batch.pair_counts()]
    out = np.array(rows, dtype=np.float64).reshape(-1, 4)
    return {k: out[:, n].copy() for n, k in enumerate(("sensitivity", "ppv", "mcc", "f1"))}


def score_batch(batch: BatchCounts) -> dict[str, np.ndarray]:
    """Sensitivity, PPV, MCC and F1 of every row, bit-identical to the scalar functions.

    Every product below is of integers smaller than 2**53 (exact in float64), and each operation rounds
    once, as Python's int/float arithmetic does in :mod:`comparna.rna.metrics`; the MCC denominator
    ``(TP+FP−ε)(TP+FN)·(TN+FP−ε)(TN+FN)`` is formed from two exact integer halves, so its one rounding equals
    the correctly rounded int→float conversion of the exact product that ``math.sqrt`` performs.
    """
    c = batch.counts
    tp, fn, fp, eps, tn = (c[:, COUNT_NAMES.index(k)] for k in ("tp", "fn", "fp", "fp_compatible", "tn"))
    tp_pred = tp if batch.tp_predicted is None else batch.tp_predicted
    fpx = fp - eps
    f = np.float64
    with np.errstate(divide="ignore", invalid="ignore"):
        sens = np.where(tp + fn > 0, tp.astype(f) / (tp + fn).astype(f), 0.0)
        ppv = np.where(tp_pred + fpx > 0, tp_pred.astype(f) / (tp_pred + fpx).astype(f), 0.0)
        half_a = (tp_pred + fpx) * (tp + fn)
        half_b = (tn + fpx) * (tn + fn)
        largest = max(int(x.max(initial=0)) for x in (half_a, half_b, tp * tn, tp * tp_pred, fpx * fn))
        if largest >= _EXACT:
            # beyond ~13 000 nt the halves are no longer exact in float64: use the scalar definitions
            return _score_rows(batch)
        den = half_a.astype(f) * half_b.astype(f)
        if batch.tp_predicted is None:
            num = (tp * tn - fpx * fn).astype(f)
        else:
            num = np.sqrt((tp * tp_pred).astype(f)) * tn.astype(f) - (fpx * fn).astype(f)
        mcc = np.where(den > 0, num / np.sqrt(den), 0.0)
        f1 = np.where(sens + ppv != 0, 2 * sens * ppv / (sens + ppv), 0.0)
    return {"sensitivity": sens, "ppv": ppv, "mcc": mcc, "f1": f1}


# ------------------------------------------------------------------------------------- chunked front ends
#: Predicted pairs per chunk: the arrays of one chunk (~40 bytes per pair, under 1 MB) stay in a core's
#: cache. Measured at 300 nt on the shared 2-core machine (load 6-9): 20 000 pairs gave 1.3-1.5x the
#: throughput of 40 000 and 80 000, and of 5 000 or 10 000 (where per-call overhead starts to count).
CHUNK_PAIRS = 20_000


def _chunks(weights: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive ranges [a, b) whose weights sum to about ``budget`` (at least one item each)."""
    bounds = [0]
    if weights.size:
        cut = np.searchsorted(np.cumsum(weights), np.arange(budget, int(weights.sum()) + budget, budget))
        bounds += sorted({int(c) + 1 for c in cut if int(c) + 1 < weights.size})
    bounds.append(int(weights.size))
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _scored(parts: list[BatchCounts], slip: bool) -> tuple[BatchCounts, dict[str, np.ndarray]]:
    """The chunks' counts joined, and their scores computed once over all rows (a row's scores depend on
    that row only)."""
    if not parts:
        counts = BatchCounts(np.zeros((0, len(COUNT_NAMES)), dtype=np.int64),
                             np.zeros(0, dtype=np.int64) if slip else None)
    elif len(parts) == 1:
        counts = parts[0]
    else:
        counts = BatchCounts(
            np.concatenate([b.counts for b in parts]),
            np.concatenate([b.tp_predicted for b in parts]) if slip else None,
        )
    return counts, score_batch(counts)


def _count_chunk(refs: PairArrays, used: np.ndarray, case_ref: np.ndarray, preds: PairArrays,
                 slip: bool) -> BatchCounts:
    """Counts of one chunk: ``refs`` holds the references ``used`` (sorted) of the whole call; the chunk's
    own references are taken from it, so each reference is encoded once per call."""
    mine, local = np.unique(case_ref, return_inverse=True)
    return count_batch(refs.take(np.searchsorted(used, mine)), preds, local, slip=slip)


def score_structures(
    references: Sequence[Structure],
    predictions: Sequence[Structure],
    case_reference: Sequence[int] | np.ndarray,
    *,
    slip: bool = False,
) -> tuple[BatchCounts, dict[str, np.ndarray]]:
    """Counts and scores of every prediction against ``references[case_reference[k]]``, in chunks.

    Equals :func:`comparna.rna.metrics.count_pairs` and its scores for every prediction (tested).
    """
    case_ref = np.asarray(case_reference, dtype=np.int64)
    weights = np.fromiter((len(p.pairs) + 1 for p in predictions), dtype=np.int64, count=len(predictions))
    used = np.unique(case_ref)
    refs = pairs_of_structures([references[k] for k in used.tolist()])
    parts = []
    for a, b in _chunks(weights, CHUNK_PAIRS):
        batch = _count_chunk(refs, used, case_ref[a:b], pairs_of_structures(predictions[a:b]), slip)
        parts.append(batch)
    return _scored(parts, slip)


def score_texts(
    reference_lengths: Sequence[int] | np.ndarray,
    reference_texts: Sequence[str],
    prediction_texts: Sequence[str],
    case_reference: Sequence[int] | np.ndarray,
    *,
    slip: bool = False,
) -> tuple[BatchCounts, dict[str, np.ndarray]]:
    """As :func:`score_structures`, from stored canonical texts; a prediction has its reference's length."""
    case_ref = np.asarray(case_reference, dtype=np.int64)
    lengths = np.asarray(reference_lengths, dtype=np.int64)
    # ~7 characters per pair in a canonical text
    weights = np.fromiter(map(len, prediction_texts), dtype=np.int64, count=len(prediction_texts)) // 7 + 1
    used = np.unique(case_ref)
    refs = pairs_of_texts(lengths[used], [reference_texts[k] for k in used.tolist()])
    parts = []
    for a, b in _chunks(weights, CHUNK_PAIRS):
        preds = pairs_of_texts(lengths[case_ref[a:b]], prediction_texts[a:b])
        batch = _count_chunk(refs, used, case_ref[a:b], preds, slip)
        parts.append(batch)
    return _scored(parts, slip)
