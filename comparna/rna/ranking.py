"""The CompaRNA pairwise ranking engine and the robustness ranking (SCIENCE.md §5).

For every pair of methods A, B on a dataset subset (Puton et al., NAR 2013, doi:10.1093/nar/gkt101) the
pairwise set is the targets predicted by both; fewer than ``min_common`` (10) gives the verdict "?".

**Primary verdict, at the target level** (:func:`target_level_ranking`, issue 27): the per-target MCC
differences A − B of the pairwise set go into the clustered Wilcoxon signed-rank test of
:func:`comparna.rna.clustered.clustered_signed_rank_test` (a sign-flip permutation test of family-summed
signed ranks; Rosner, Glynn & Lee, Biometrics 2003/2006), exact for few families. The p-values of every
tested pair of the subset are Holm-adjusted (Holm 1979); adjusted p < ``alpha`` (0.001) makes the method
with the higher mean per-target MCC the winner ("+" for the winner's row, "-" for the loser's). A pair that
is not significant is a draw ("=") only when it had at least 80 % power to detect a mean difference of the
equivalence margin (0.05 MCC, :mod:`comparna.rna.thresholds`); otherwise it is "?" — too few targets or
families to tell. The evidence is counted in targets and families: resampling the same targets adds none
(Xu et al. 2012; Hajiaghayi et al. 2012). Each method's rank has a 95 % interval from a bootstrap of
families (:func:`rank_intervals`).

**CompaRNA 2013 protocol** (:func:`pairwise_ranking`, kept as a clearly labelled view to reproduce the
paper's tables, never the headline):

- ``replicates`` (40) times, a random ``fraction`` (90 %) of the pairwise set is drawn without replacement,
  each method's counts are pooled over the drawn targets and turned into an MCC;
- a two-sided Wilcoxon signed-rank test on the 40 paired MCCs; p < ``alpha`` (0.001) makes the method with
  the higher mean MCC the winner, otherwise a draw ("="). Its p-value shrinks with the number of
  replicates, not with the evidence (the 40 MCCs are pseudo-replicates of the same targets): 12 targets
  with A better on 7 and worse on 5 give "A wins at p < 0.001" there.

Methods are ranked by their number of wins (competition ranking: ties share a rank, 1, 1, 3).

Conventions of the 2013 protocol **[convention]** (recorded in :func:`engine_conventions` and in every
result):

- Subsample size ``k = floor(fraction * n)`` computed exactly (``Fraction``), so n = 10 gives 9 targets.
  The ``m = n - k`` excluded targets are drawn, not the kept ones, because that needs ~10x fewer random
  numbers: the first ``m`` distinct values of a stream of uniform integers in ``[0, n)`` (sequential sampling
  without replacement, so every m-subset is equally likely). See :func:`draw_exclusions`.
- Each pair's random stream is a PCG64 generator seeded from a BLAKE2b digest of the seed and the sorted
  method names (:func:`pair_rng`), so a pair's verdict depends only on the seed, the two method names and
  their counts: adding or removing a method never changes the verdicts of other pairs. A pair's common
  targets are indexed in the order of the table's targets.
- The Wilcoxon test reproduces ``scipy.stats.wilcoxon(mcc_a, mcc_b)`` with its defaults
  (``zero_method='wilcox'``: zero differences are dropped; no continuity correction; ``method='auto'``): the
  exact null distribution when there are no ties and no zero differences (and at most 50 replicates),
  otherwise the normal approximation with the tie correction. If every difference is zero the verdict is a
  draw. The engine requires more than 13 replicates because scipy switches to a permutation test below that.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy.special import ndtr

from comparna.rna import thresholds
from comparna.rna.clustered import cluster_codes
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.statistics import holm_adjust

#: Column order of the last axis of :attr:`CountsTable.counts`.
COUNT_FIELDS: tuple[str, ...] = ("tp", "fn", "fp", "fp_compatible", "tn")

REPLICATES = thresholds.REPLICATES_2013
FRACTION = thresholds.FRACTION_2013
ALPHA = thresholds.ALPHA
MIN_COMMON = thresholds.MIN_COMMON

WIN, LOSS, DRAW, UNKNOWN = "+", "-", "=", "?"


class CountsFormatError(ValueError):
    """A malformed counts CSV; the message names the 1-based line of the problem."""

    def __init__(self, message: str, *, line: int | None = None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


# --------------------------------------------------------------------------------------------------- MCC
def pooled_mcc(counts: np.ndarray) -> np.ndarray:
    """MCC of counts pooled over the second-to-last axis; ``counts[..., :]`` in :data:`COUNT_FIELDS` order."""
    pooled = np.asarray(counts).sum(axis=-2)
    return mcc_from_arrays(*np.moveaxis(pooled, -1, 0))


# ------------------------------------------------------------------------------------------- the input
@dataclass(frozen=True)
class CountsTable:
    """Counts of every (method, target) prediction as dense arrays.

    Parameters
    ----------
    methods : tuple of str
        Method names (unique).
    targets : tuple of str
        Target names (unique); their order defines the order of a pair's common targets.
    counts : numpy.ndarray
        int64 array of shape (methods, targets, 5) in :data:`COUNT_FIELDS` order; zero where absent.
    present : numpy.ndarray
        bool array of shape (methods, targets): whether the method has a prediction for the target.
    """

    methods: tuple[str, ...]
    targets: tuple[str, ...]
    counts: np.ndarray
    present: np.ndarray

    def __post_init__(self) -> None:
        m, t = len(self.methods), len(self.targets)
        if self.counts.shape != (m, t, len(COUNT_FIELDS)) or self.present.shape != (m, t):
            raise ValueError(
                f"counts {self.counts.shape} / present {self.present.shape} do not match "
                f"{m} methods x {t} targets"
            )
        if len(set(self.methods)) != m or len(set(self.targets)) != t:
            raise ValueError("method and target names must be unique")

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, int, int, int, int, int]]) -> CountsTable:
        """Build a table from ``(method, target, tp, fn, fp, fp_compatible, tn)`` rows (one per prediction).

        Methods and targets keep their order of first appearance. A repeated (method, target) raises
        ``ValueError``.
        """
        method_ix: dict[str, int] = {}
        target_ix: dict[str, int] = {}
        keys: list[tuple[int, int]] = []
        values: list[tuple[int, ...]] = []
        for method, target, *numbers in rows:
            keys.append(
                (method_ix.setdefault(method, len(method_ix)), target_ix.setdefault(target, len(target_ix)))
            )
            values.append(tuple(numbers))
        counts = np.zeros((len(method_ix), len(target_ix), len(COUNT_FIELDS)), dtype=np.int64)
        present = np.zeros((len(method_ix), len(target_ix)), dtype=bool)
        if keys:
            mi, ti = np.array(keys, dtype=np.intp).T
            if np.unique(mi * len(target_ix) + ti).size != len(keys):
                raise ValueError("a (method, target) pair appears more than once")
            counts[mi, ti] = np.array(values, dtype=np.int64)
            present[mi, ti] = True
        return cls(tuple(method_ix), tuple(target_ix), counts, present)

    def select_targets(self, targets: Sequence[str] | np.ndarray) -> CountsTable:
        """The table restricted to some targets (names, or an index/boolean array), in the given order."""
        if len(targets) and isinstance(targets[0], str):
            where = {name: i for i, name in enumerate(self.targets)}
            ix = np.array([where[name] for name in targets], dtype=np.intp)
        else:
            ix = np.asarray(targets)
            ix = np.flatnonzero(ix) if ix.dtype == bool else ix.astype(np.intp)
        return CountsTable(
            self.methods, tuple(self.targets[i] for i in ix), self.counts[:, ix], self.present[:, ix]
        )

    def select_methods(self, methods: Sequence[str]) -> CountsTable:
        """The table restricted to some methods, in the given order."""
        ix = [self.methods.index(name) for name in methods]
        return CountsTable(tuple(methods), self.targets, self.counts[ix], self.present[ix])


def read_counts_csv(source: str | Path | io.TextIOBase) -> CountsTable:
    """Read ``method,target,tp,fn,fp,fp_compatible,tn`` rows (with that header, any column order).

    Parameters
    ----------
    source : path or text stream

    Raises
    ------
    CountsFormatError
        Missing columns, a non-integer or negative count, ``fp_compatible > fp``, an empty name, a repeated
        (method, target) or no rows at all; the message names the line.
    """
    if isinstance(source, (str, Path)):
        with open(source, newline="", encoding="utf-8") as handle:
            return read_counts_csv(handle)
    reader = csv.reader(source)
    header = next(reader, None)
    if header is None:
        raise CountsFormatError(
            "empty file, expected the header method,target," + ",".join(COUNT_FIELDS), line=1
        )
    header = [name.strip() for name in header]
    required = ("method", "target", *COUNT_FIELDS)
    missing = [name for name in required if name not in header]
    if missing:
        raise CountsFormatError(f"header lacks column(s) {', '.join(missing)}", line=1)
    col = [header.index(name) for name in required]
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for row in reader:
        line = reader.line_num
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise CountsFormatError(f"expected {len(header)} fields, found {len(row)}", line=line)
        method, target = row[col[0]].strip(), row[col[1]].strip()
        if not method or not target:
            raise CountsFormatError("empty method or target name", line=line)
        numbers = []
        for name, c in zip(COUNT_FIELDS, col[2:], strict=True):
            text = row[c].strip()
            try:
                value = int(text)
            except ValueError:
                raise CountsFormatError(f"{name} is not an integer: {text!r}", line=line) from None
            if value < 0:
                raise CountsFormatError(f"{name} is negative: {value}", line=line)
            numbers.append(value)
        if numbers[3] > numbers[2]:
            raise CountsFormatError(f"fp_compatible {numbers[3]} exceeds fp {numbers[2]}", line=line)
        if (method, target) in seen:
            raise CountsFormatError(
                f"({method}, {target}) already given on line {seen[method, target]}", line=line
            )
        seen[method, target] = line
        rows.append((method, target, *numbers))
    if not rows:
        raise CountsFormatError("no prediction rows after the header", line=2)
    return CountsTable.from_rows(rows)


# --------------------------------------------------------------------------------------- random draws
@functools.lru_cache(maxsize=65536)
def subsample_size(n: int, fraction: float = FRACTION) -> int:
    """Number of kept targets, ``floor(fraction * n)`` in exact arithmetic (n = 10 → 9, n = 25 → 22)."""
    return math.floor(Fraction(str(fraction)) * n)


def _pair_state(seed: int, method_a: str, method_b: str) -> dict:
    first, second = sorted((method_a, method_b))
    digest = hashlib.blake2b(f"{int(seed)}\x00{first}\x00{second}".encode(), digest_size=32).digest()
    return {
        "bit_generator": "PCG64",
        "state": {
            "state": int.from_bytes(digest[:16], "little"),
            "inc": int.from_bytes(digest[16:], "little") | 1,
        },
        "has_uint32": 0,
        "uinteger": 0,
    }


def pair_rng(seed: int, method_a: str, method_b: str) -> np.random.Generator:
    """The random stream of one method pair: symmetric in the two names and independent of other methods.

    A PCG64 generator whose 128-bit state and increment are the BLAKE2b-256 digest of
    ``"{seed}\\0{first name}\\0{second name}"`` (names sorted). Setting the state directly is ~5x cheaper
    than going through ``SeedSequence``, which matters for 17 000 pairs a night.
    """
    bit_generator = np.random.PCG64(0)
    bit_generator.state = _pair_state(seed, method_a, method_b)
    return np.random.Generator(bit_generator)


def exclusion_width(n: int, excluded: int) -> int:
    """Length of the row of uniform draws used to find ``excluded`` distinct values among ``n``.

    The expected number of repeats is about ``excluded**2 / n``; four standard deviations on top make a
    redraw (:func:`draw_exclusions`) very rare. It depends on (n, excluded) only, so a pair's draws never
    depend on other pairs.
    """
    expected_repeats = excluded * excluded / n
    return excluded + math.ceil(expected_repeats + 4 * math.sqrt(expected_repeats)) + 4


def first_distinct(
    draws: np.ndarray, widths: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``wanted[r]`` distinct values of each row ``draws[r, :widths[r]]``, for many rows at once.

    Parameters
    ----------
    draws : numpy.ndarray
        Non-negative integers, shape (rows, W); entries at or beyond a row's width are ignored (overwritten).
    widths, wanted : numpy.ndarray
        Per row.

    Returns
    -------
    (values, sizes, complete)
        ``values``: 1-D, the selected values of row 0, then row 1, ... each in draw order; ``sizes[r]``:
        how many values row r contributed (``wanted[r]`` for a complete row); ``complete[r]`` is False when
        the row has fewer than ``wanted[r]`` distinct values among its real entries (it must be redrawn).
    """
    rows, width = draws.shape
    wanted = np.asarray(wanted, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    if rows == 0 or width == 0:
        return np.empty(0, dtype=np.intp), np.zeros(rows, dtype=np.int64), wanted == 0
    col = np.arange(width)
    top = int(draws.max(initial=0)) + 1
    col_bits = max(1, (width - 1).bit_length())
    dtype = np.int32 if (top + width) << col_bits < 2**31 else np.int64
    values = draws.astype(dtype)
    # padding becomes distinct sentinels above every real value, placed after the real columns, so it can
    # neither hide a real first occurrence nor be selected by a complete row
    padding = col[None, :] >= widths[:, None]
    if padding.any():
        values[padding] = (top + col[None, :].repeat(rows, axis=0))[padding].astype(dtype)
    # one row sort of (value, column) keys: equal values end up adjacent, earliest column first
    keys = np.sort((values << col_bits) | col.astype(dtype), axis=1)
    sorted_values = keys >> col_bits
    repeat_rows, repeat_cols = np.nonzero(sorted_values[:, 1:] == sorted_values[:, :-1])
    first = np.ones(keys.shape, dtype=bool)
    first[repeat_rows, keys[repeat_rows, repeat_cols + 1] & ((1 << col_bits) - 1)] = False
    rank = np.cumsum(first, axis=1, dtype=np.int32)
    complete = rank[np.arange(rows), widths - 1] >= wanted
    first &= rank <= wanted[:, None]
    return values[first].astype(np.intp), np.minimum(rank[:, -1], wanted), complete


def draw_exclusions(
    rng: np.random.Generator, n: int, excluded: int, replicates: int = REPLICATES
) -> np.ndarray:
    """Draw, for every replicate, a uniformly random set of ``excluded`` distinct indices in ``[0, n)``.

    The set is the first ``excluded`` distinct values of a row of ``exclusion_width(n, excluded)`` uniform
    integers ``rng.integers(0, n, (replicates, width))`` — sequential sampling without replacement, so every
    subset is equally likely. If some row has too few distinct values, all rows are drawn again from the
    same stream, twice as wide (the event is invariant under relabelling the indices, so the result stays
    uniform). :func:`pairwise_ranking` draws exactly the same numbers in a batched way.

    Returns
    -------
    numpy.ndarray
        intp array of shape (replicates, excluded), each row in draw order.
    """
    if excluded == 0:
        return np.empty((replicates, 0), dtype=np.intp)
    if not 0 < excluded <= n:
        raise ValueError(f"cannot exclude {excluded} of {n}")
    width = exclusion_width(n, excluded)
    while True:
        draws = rng.integers(0, n, size=(replicates, width))
        values, _, complete = first_distinct(
            draws, np.full(replicates, width), np.full(replicates, excluded)
        )
        if complete.all():
            return values.reshape(replicates, excluded)
        width *= 2


def kept_indices(exclusions: np.ndarray, n: int) -> np.ndarray:
    """Complement of :func:`draw_exclusions`: the kept indices of each replicate, sorted, shape (R, k)."""
    keep = np.ones((exclusions.shape[0], n), dtype=bool)
    keep[np.arange(exclusions.shape[0])[:, None], exclusions] = False
    return np.nonzero(keep)[1].reshape(exclusions.shape[0], -1)


# ------------------------------------------------------------------------------------ Wilcoxon, batched
_EXACT_P_CACHE: dict[int, np.ndarray] = {}


def _exact_two_sided_p(n: int) -> np.ndarray:
    """Two-sided exact p-value for every possible R+ = 0 … n(n+1)/2 with n non-zero, untied differences.

    The null distribution of R+ (sum of the ranks of positive differences) is built with the textbook
    recursion over ranks (each rank k joins the positive set with probability 1/2); p follows
    scipy.stats.wilcoxon: ``2 * min(P(R+ >= r), P(R+ <= r))`` clipped to 1.
    """
    if n not in _EXACT_P_CACHE:
        pmf = np.ones(1)
        for k in range(1, n + 1):
            nxt = np.zeros(pmf.size + k)
            nxt[: pmf.size] += 0.5 * pmf
            nxt[k:] += 0.5 * pmf
            pmf = nxt
        cdf = np.cumsum(pmf)
        sf = np.cumsum(pmf[::-1])[::-1]
        _EXACT_P_CACHE[n] = np.minimum(2 * np.minimum(sf, cdf), 1.0)
    return _EXACT_P_CACHE[n]


def wilcoxon_pvalues(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Two-sided Wilcoxon signed-rank p-values of many paired samples at once.

    Row ``i`` gives the same p-value as ``scipy.stats.wilcoxon(x[i], y[i]).pvalue`` with scipy's defaults
    (Wilcoxon 1945; zero differences dropped, ``zero_method='wilcox'``; exact null distribution when there
    are no ties and no zeros and at most 50 pairs; otherwise the normal approximation with the tie
    correction ``sum(t^3 - t)/48`` and no continuity correction). Rows whose differences are all zero give
    NaN (scipy gives NaN too).

    Parameters
    ----------
    x, y : numpy.ndarray
        float arrays of shape (rows, n), n > 13.

    Returns
    -------
    numpy.ndarray
        p-values, shape (rows,).
    """
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    rows, n = d.shape
    if n <= 13:
        raise ValueError("scipy uses a permutation test for n <= 13 with ties; use more replicates")
    nonzero = d != 0
    count = nonzero.sum(axis=1)
    key = np.where(nonzero, np.abs(d), np.inf)  # zeros sort last and are masked out below
    order = np.argsort(key, axis=1, kind="stable")
    r = np.arange(rows)[:, None]
    ordered = key[r, order]
    pos = np.broadcast_to(np.arange(1, n + 1), d.shape)
    valid = pos <= count[:, None]
    starts = np.ones(d.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones(d.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    group_start = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    group_end = np.minimum.accumulate(np.where(ends, pos, n + 1)[:, ::-1], axis=1)[:, ::-1]
    average_rank = 0.5 * (group_start + group_end)
    tie_size = (group_end - group_start + 1).astype(np.float64)
    positive_sorted = (d[r, order] > 0) & valid
    r_plus = np.where(positive_sorted, average_rank, 0.0).sum(axis=1)
    tied = (tie_size > 1) & valid
    # sum over groups of t^3 - t == sum over tied elements of t^2 - 1
    tie_correct = np.where(tied, tie_size * tie_size - 1.0, 0.0).sum(axis=1)
    has_ties = tied.any(axis=1)

    cnt = count.astype(np.float64)
    mn = cnt * (cnt + 1.0) * 0.25
    se = np.sqrt((cnt * (cnt + 1.0) * (2.0 * cnt + 1.0) - tie_correct / 2) / 24)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (r_plus - mn) / se
    p = 2 * ndtr(-np.abs(z))
    exact = ~has_ties & (count == n)
    if n <= 50 and exact.any():
        p[exact] = _exact_two_sided_p(n)[r_plus[exact].astype(np.intp)]
    return p


# ------------------------------------------------------------------------------------ the pairwise engine
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
        Per method; ``ranks`` is the competition rank by wins (1, 1, 3).
    seed : int
    conventions : dict
    p_adjusted : numpy.ndarray or None
        (M, M) Holm-adjusted p-values (target-level verdict only).
    power : numpy.ndarray or None
        (M, M) power of each pair to detect the equivalence margin (target-level verdict only).
    reasons : numpy.ndarray or None
        (M, M) why a verdict is "?": "few" (under ``min_common`` common targets) or "power" (not
        significant and under-powered); "" otherwise (target-level verdict only).
    clusters : numpy.ndarray or None
        (M, M) families among each pair's common targets (target-level verdict only).
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
    power: np.ndarray | None = None
    reasons: np.ndarray | None = None
    clusters: np.ndarray | None = None

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


def engine_conventions(
    *,
    replicates: int = REPLICATES,
    fraction: float = FRACTION,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
) -> dict:
    """The conventions of :func:`pairwise_ranking`, to be stored with every result."""
    return {
        "protocol": thresholds.PROTOCOL_2013_LABEL,
        "replicates": replicates,
        "subsample": f"floor({fraction} * n) common targets without replacement",
        "min_common_targets": min_common,
        "test": "two-sided Wilcoxon signed-rank on paired replicate MCCs (scipy.stats.wilcoxon defaults: "
        "zero differences dropped, exact null without ties/zeros, else normal approximation with "
        "tie correction, no continuity correction); all differences zero -> draw",
        "alpha": alpha,
        "winner": "higher mean replicate MCC",
        "rng": "per pair: PCG64 with state and increment from blake2b-256 of 'seed\\0name1\\0name2' (sorted)",
        "rank": "competition ranking by wins (1, 1, 3)",
        "score": "pooled MCC with compatible FPs neutral (SCIENCE.md §2)",
    }


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1 + the number of strictly better scores (ties share the best rank: 1, 1, 3)."""
    scores = np.asarray(scores)
    return 1 + (scores[None, :] > scores[:, None]).sum(axis=1)


def pair_replicate_mccs(
    table: CountsTable, a: int, b: int, seed: int, *, replicates: int = REPLICATES, fraction: float = FRACTION
) -> tuple[np.ndarray, np.ndarray, int]:
    """Replicate MCCs of methods ``a`` and ``b`` on their common targets (one pair; see module docstring).

    Returns
    -------
    (mcc_a, mcc_b, n_common)
        Two float arrays of shape (replicates,), or empty arrays when the pair has no common targets.
    """
    common = np.flatnonzero(table.present[a] & table.present[b])
    n = common.size
    if n == 0:
        return np.empty(0), np.empty(0), 0
    rng = pair_rng(seed, table.methods[a], table.methods[b])
    excluded = common[draw_exclusions(rng, n, n - subsample_size(n, fraction), replicates)]
    both = table.counts[[a, b]]  # (2, T, 5)
    pooled = both[:, common].sum(axis=1)[:, None, :] - both[:, excluded].sum(axis=2)  # (2, R, 5)
    mcc = mcc_from_arrays(*np.moveaxis(pooled, -1, 0))
    return mcc[0], mcc[1], n


def pairwise_ranking(
    table: CountsTable,
    *,
    seed: int,
    replicates: int = REPLICATES,
    fraction: float = FRACTION,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    chunk_pairs: int = 256,
) -> PairwiseRanking:
    """Compare every pair of methods and rank them by wins (SCIENCE.md §5).

    Parameters
    ----------
    table : CountsTable
        Counts of one dataset subset under one pair definition.
    seed : int
        Non-negative seed; with the same table and seed the result is identical.
    replicates, fraction, alpha, min_common
        40, 0.9, 0.001 and 10 in CompaRNA.

    Returns
    -------
    PairwiseRanking
    """
    if seed < 0:
        raise ValueError("seed must be non-negative")
    m = len(table.methods)
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    # Same numbers as pair_replicate_mccs, arranged for speed: the totals over every pair's common targets
    # come from one matrix product; the random rows of many pairs are reduced to their first distinct values
    # in one batched row sort; each method's counts are laid out (5, T) so that gathering the excluded
    # targets of a pair reduces along a contiguous, cache-resident axis.
    # MCC needs FP and ε only as FP − ε: gather four fields (tp, fn, fp − ε, tn), not five
    counts = table.counts[..., [0, 1, 2, 4]].copy()
    counts[..., 2] -= table.counts[..., 3]
    n_fields = 4
    totals = np.rint(present.astype(np.float64) @ counts.transpose(1, 0, 2).reshape(len(table.targets), -1))
    totals = totals.astype(np.int64).reshape(m, m, n_fields)  # totals[b, a] = a's counts on common(a, b)
    narrow = counts.size == 0 or counts.max() < 2**31
    counts_t = np.ascontiguousarray(np.moveaxis(counts, -1, 1), dtype=np.int32 if narrow else np.int64)
    pooled = np.empty((len(pairs), 2, n_fields, replicates), dtype=np.int64)
    bit_generator = np.random.PCG64(0)
    rng = np.random.Generator(bit_generator)
    for start in range(0, len(pairs), chunk_pairs):
        chunk = pairs[start : start + chunk_pairs]
        where = [np.flatnonzero(present[a] & present[b]) for a, b in chunk]
        n = np.array([w.size for w in where], dtype=np.int64)
        excluded = n - np.array([subsample_size(int(x), fraction) for x in n], dtype=np.int64)
        widths = np.array([exclusion_width(int(x), int(e)) for x, e in zip(n, excluded, strict=True)])
        draws = np.empty((len(chunk), replicates, int(widths.max())), dtype=np.int64)
        for i, (a, b) in enumerate(chunk):
            bit_generator.state = _pair_state(seed, table.methods[a], table.methods[b])
            draws[i, :, : widths[i]] = rng.integers(0, n[i], size=(replicates, widths[i]))
        values, sizes, complete = first_distinct(
            draws.reshape(len(chunk) * replicates, -1),
            np.repeat(widths, replicates),
            np.repeat(excluded, replicates),
        )
        complete = complete.reshape(len(chunk), replicates).all(axis=1)
        ends = np.cumsum(sizes.reshape(len(chunk), replicates).sum(axis=1))
        for i, (a, b) in enumerate(chunk):
            if complete[i]:
                local = values[ends[i] - replicates * excluded[i] : ends[i]].reshape(replicates, -1)
            else:  # rare: redo this pair the slow way, which continues with a wider draw
                rng_i = pair_rng(seed, table.methods[a], table.methods[b])
                local = draw_exclusions(rng_i, int(n[i]), int(excluded[i]), replicates)
            gone = where[i][local]
            p = start + i
            pooled[p, 0] = totals[b, a][:, None] - np.take(counts_t[a], gone, axis=1).sum(-1, dtype=np.int64)
            pooled[p, 1] = totals[a, b][:, None] - np.take(counts_t[b], gone, axis=1).sum(-1, dtype=np.int64)
    tp, fn, fp_net, tn = np.moveaxis(pooled, 2, 0)
    mcc = mcc_from_arrays(tp, fn, fp_net, 0, tn)  # (pairs, 2, replicates)
    p_values = np.full((m, m), np.nan)
    mean_difference = np.full((m, m), np.nan)
    verdicts = np.full((m, m), UNKNOWN, dtype="<U1")
    np.fill_diagonal(verdicts, "")
    if pairs:
        pa, pb = np.array(pairs).T
        with np.errstate(invalid="ignore"):
            pv = wilcoxon_pvalues(mcc[:, 0], mcc[:, 1])
        diff = (mcc[:, 0] - mcc[:, 1]).mean(axis=1)
        significant = (pv < alpha) & (diff != 0)
        forward = np.where(significant, np.where(diff > 0, WIN, LOSS), DRAW)
        backward = np.where(significant, np.where(diff > 0, LOSS, WIN), DRAW)
        verdicts[pa, pb], verdicts[pb, pa] = forward, backward
        p_values[pa, pb] = p_values[pb, pa] = pv
        mean_difference[pa, pb], mean_difference[pb, pa] = diff, -diff
    return _pairwise_result(
        table, verdicts, common=common, p_values=p_values, mean_difference=mean_difference, seed=seed,
        conventions=engine_conventions(
            replicates=replicates, fraction=fraction, alpha=alpha, min_common=min_common
        ),
    )


def _pairwise_result(table: CountsTable, verdicts: np.ndarray, *, seed: int, **fields) -> PairwiseRanking:
    """A :class:`PairwiseRanking` from a verdict matrix: wins, losses, draws, "?" and competition ranks
    counted from it (both protocols), the other fields as given."""
    wins = (verdicts == WIN).sum(axis=1)
    return PairwiseRanking(
        methods=table.methods,
        verdicts=verdicts,
        wins=wins,
        losses=(verdicts == LOSS).sum(axis=1),
        draws=(verdicts == DRAW).sum(axis=1),
        unknown=(verdicts == UNKNOWN).sum(axis=1),
        ranks=competition_ranks(wins),
        seed=int(seed),
        **fields,
    )


# ------------------------------------------------------------------------------- target-level verdicts
def per_target_mcc(table: CountsTable) -> np.ndarray:
    """(methods, targets) MCC of every prediction (compatible FPs neutral; meaningless where absent)."""
    return mcc_from_arrays(*np.moveaxis(table.counts.astype(np.float64), -1, 0))


def target_conventions(
    *,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    margin: float = thresholds.VERDICT_MARGIN,
    power: float = thresholds.VERDICT_POWER,
) -> dict:
    """The conventions of :func:`target_level_ranking`, stored with every result."""
    return {
        "protocol": thresholds.PROTOCOL_TARGET_LABEL,
        "min_common_targets": min_common,
        "test": "paired Wilcoxon signed-rank on per-target MCC differences, respecting families: sign-flip "
        "permutation test of family-summed signed ranks (clustered signed-rank test of Rosner, Glynn & Lee, "
        "Biometrics 2003/2006); zero differences dropped, average ranks for ties; exact null distribution "
        "(all 2^C family sign flips: enumerated up to 20 families, else by convolution while clusters x "
        "support <= 4e6), else its normal form (Var T = sum S_c^2)",
        "adjustment": "Holm (1979) across every tested pair of the subset",
        "alpha": alpha,
        "winner": "higher mean per-target MCC (when it agrees with the sign of the signed-rank statistic)",
        "draw": f"not significant and power >= {power:g} to detect a mean MCC difference of {margin:g} at "
        f"alpha {alpha:g} (normal approximation with the family-robust (CR1) standard error)",
        "unknown": f"fewer than {min_common} common targets, or not significant and under-powered",
        "margin": margin,
        "power": power,
        "rank": "competition ranking by wins (1, 1, 3)",
        "score": "per-target MCC with compatible FPs neutral (SCIENCE.md §2)",
        "clusters": "the dataset's declared family, else the Rfam assignment, else the target alone",
    }


def detection_power(se: float, *, margin: float, alpha: float) -> float:
    """Power of the two-sided test at ``alpha`` to detect a mean difference ``margin`` when the mean's
    standard error is ``se`` (normal approximation, as :func:`comparna.rna.statistics.posterior_power`).

    A zero standard error (every difference equal) gives power 1; NaN (one family) gives 0.
    """
    from scipy.special import ndtri

    if not np.isfinite(se):
        return 0.0
    if se == 0:
        return 1.0
    shift = abs(margin) / se
    z = ndtri(1 - alpha / 2)
    return float(ndtr(shift - z) + ndtr(-shift - z))


def _codes(clusters, n_targets: int) -> np.ndarray:
    if clusters is None:
        return np.arange(n_targets, dtype=np.int64)
    codes = cluster_codes(list(clusters)).codes if len(clusters) else np.zeros(0, dtype=np.int64)
    if codes.size != n_targets:
        raise ValueError(f"{codes.size} cluster labels for {n_targets} targets")
    return codes


@dataclass(frozen=True)
class PairSignedRanks:
    """Per pair of methods, what the target-level verdict and the rank intervals read off its common targets.

    Attributes
    ----------
    pairs : list of (int, int)
        The pairs (a < b), in the order of every array below.
    pvalue, statistic : numpy.ndarray
        (P,) :func:`comparna.rna.clustered.clustered_signed_rank_test` of the per-target MCC differences
        a − b with the families of the targets.
    mean : numpy.ndarray
        (P,) mean difference a − b over the common targets.
    nonzero : numpy.ndarray
        (P,) bool: some difference is not exactly 0.
    se : numpy.ndarray
        (P,) the CR1 family-robust standard error of the mean difference (NaN with one family).
    clusters : numpy.ndarray
        (P,) int, families among the common targets.
    signed, diffs, sizes : numpy.ndarray or None
        (families, P) float64 per family: the summed signed average ranks, the summed differences and the
        number of common targets (only when asked for: the rank intervals resample them).
    """

    pairs: list[tuple[int, int]]
    pvalue: np.ndarray
    statistic: np.ndarray
    mean: np.ndarray
    nonzero: np.ndarray
    se: np.ndarray
    clusters: np.ndarray
    signed: np.ndarray | None = None
    diffs: np.ndarray | None = None
    sizes: np.ndarray | None = None


#: Bits of a rank key below the rounded |d| (×1e12, at most 2·10^12 < 2^41): the target's column.
_ROUNDED_BITS = 41
#: Elements (pairs × targets) per block of :func:`pair_signed_ranks`: bounds its memory to ~50 MB.
_PAIR_BLOCK = 1 << 19


def pair_signed_ranks(
    table: CountsTable, codes: np.ndarray, pairs: Sequence[tuple[int, int]], *, sums: bool = False
) -> PairSignedRanks:
    """The clustered signed-rank test and the family sums of every pair at once.

    The same numbers as calling :func:`comparna.rna.clustered.clustered_signed_rank_test` pair by pair
    (identical to the last bit: ranks and family sums of ranks are integers, every mean and standard error
    is taken over the same array in the same order), computed for blocks of pairs together: the differences
    of a block are ranked by one row-wise sort of integer keys (rounded |d| above the column), ties get
    their average rank, and the signed ranks, differences and counts are summed per family with one
    ``bincount`` over (pair, family) bins.

    Parameters
    ----------
    table : CountsTable
    codes : numpy.ndarray
        int family code (0 … C−1) of every target of the table.
    pairs : sequence of (int, int)
    sums : bool
        Also return the per-family sums the rank intervals resample (:attr:`PairSignedRanks.signed` …).
    """
    from comparna.rna.clustered import ZERO_TOLERANCE, sign_flip_pvalue

    t = len(table.targets)
    n_pairs = len(pairs)
    n_codes = int(codes.max()) + 1 if t else 0
    out = {
        "pvalue": np.full(n_pairs, np.nan),
        "statistic": np.zeros(n_pairs),
        "mean": np.full(n_pairs, np.nan),
        "nonzero": np.zeros(n_pairs, dtype=bool),
        "se": np.full(n_pairs, np.nan),
        "clusters": np.zeros(n_pairs, dtype=np.int64),
    }
    if sums:
        for name in ("signed", "diffs", "sizes"):
            out[name] = np.zeros((n_codes, n_pairs))
    if n_pairs == 0 or t == 0:
        return PairSignedRanks(list(pairs), **out)
    scores = per_target_mcc(table)
    present = table.present
    col_bits = max(1, (t - 1).bit_length())
    if _ROUNDED_BITS + col_bits > 62:
        raise ValueError(f"too many targets ({t}) for the rank keys")
    sentinel = np.int64(1) << _ROUNDED_BITS  # above every rounded |d|: the dropped differences sort last
    cols = np.arange(t, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    pair_array = np.array(pairs, dtype=np.intp).reshape(-1, 2)
    step = max(1, _PAIR_BLOCK // t)
    for start in range(0, n_pairs, step):
        pa, pb = pair_array[start : start + step].T
        rows = pa.size
        common = present[pa] & present[pb]
        diff = scores[pa] - scores[pb]
        keep = common & (np.abs(diff) > ZERO_TOLERANCE)
        # ranks of the rounded |d| of the kept differences: np.round(x, 12) is rint(x·1e12) / 1e12, so the
        # integers rint(x·1e12) order and tie exactly as the rounded values do
        rounded = np.rint(np.abs(diff) * 1e12).astype(np.int64)
        keys = np.sort((np.where(keep, rounded, sentinel) << col_bits) | cols, axis=1)
        value, col = keys >> col_bits, keys & ((1 << col_bits) - 1)
        first = np.ones(keys.shape, dtype=bool)
        first[:, 1:] = value[:, 1:] != value[:, :-1]
        last = np.ones(keys.shape, dtype=bool)
        last[:, :-1] = first[:, 1:]
        group_start = np.maximum.accumulate(np.where(first, cols, 0), axis=1)
        group_end = np.minimum.accumulate(np.where(last, cols, t - 1)[:, ::-1], axis=1)[:, ::-1]
        ranks2 = group_start + group_end + 2  # twice the average 1-based rank: an integer
        kept = cols[None, :] < keep.sum(axis=1)[:, None]
        row_ix = np.broadcast_to(np.arange(rows)[:, None], keys.shape)[kept]
        kept_col = col[kept]
        positive = diff[row_ix, kept_col] > 0
        signed2 = np.where(positive, ranks2[kept], -ranks2[kept]).astype(np.float64)
        bins = row_ix * n_codes + codes[kept_col]
        rank_sums = np.rint(np.bincount(bins, weights=signed2, minlength=rows * n_codes)).astype(np.int64)
        rank_sums = rank_sums.reshape(rows, n_codes)
        ranked = np.bincount(bins, minlength=rows * n_codes).reshape(rows, n_codes) > 0
        # the common targets of each pair, concatenated in table order (row-major nonzero)
        c_row, c_col = np.nonzero(common)
        d_all = diff[c_row, c_col]
        c_bins = c_row * n_codes + codes[c_col]
        sizes = np.bincount(c_bins, minlength=rows * n_codes).reshape(rows, n_codes)
        bounds = np.concatenate(([0], np.cumsum(common.sum(axis=1))))
        means = np.array([d_all[bounds[k] : bounds[k + 1]].mean() for k in range(rows)])
        residual = np.bincount(c_bins, weights=d_all - means[c_row], minlength=rows * n_codes)
        residual = residual.reshape(rows, n_codes)
        for k in range(rows):
            p = start + k
            local = rank_sums[k][ranked[k]]
            out["pvalue"][p] = sign_flip_pvalue(local)[0]
            out["statistic"][p] = float(local.sum()) / 2
            out["mean"][p] = means[k]
            out["nonzero"][p] = bool(np.any(d_all[bounds[k] : bounds[k + 1]]))
            in_pair = sizes[k] > 0
            n_fam = int(in_pair.sum())
            out["clusters"][p] = n_fam
            if n_fam >= 2:
                r = residual[k][in_pair]
                n = int(bounds[k + 1] - bounds[k])
                out["se"][p] = float(np.sqrt(n_fam / (n_fam - 1) * np.sum(r**2)) / n)
        if sums:
            out["signed"][:, start : start + rows] = rank_sums.T / 2
            out["diffs"][:, start : start + rows] = (
                np.bincount(c_bins, weights=d_all, minlength=rows * n_codes).reshape(rows, n_codes).T
            )
            out["sizes"][:, start : start + rows] = sizes.T
    return PairSignedRanks(list(pairs), **out)


def target_level_ranking(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    margin: float = thresholds.VERDICT_MARGIN,
    power: float = thresholds.VERDICT_POWER,
    pair_data: PairSignedRanks | None = None,
) -> PairwiseRanking:
    """Compare every pair of methods at the target level and rank them by wins (the primary verdict).

    Parameters
    ----------
    table : CountsTable
        Counts of one dataset subset under one pair definition.
    clusters : sequence of str, optional
        The family of every target of the table (None: every target its own family).
    seed : int
        Recorded with the result (the verdicts themselves use no random numbers).
    alpha, min_common, margin, power
        0.001, 10, 0.05 MCC and 0.8 (:mod:`comparna.rna.thresholds`).
    pair_data : PairSignedRanks, optional
        :func:`pair_signed_ranks` of the same table, clusters and ``min_common`` (computed when not given;
        :func:`ranking_report` shares it with :func:`rank_intervals`).

    Returns
    -------
    PairwiseRanking
        ``p_values`` are the unadjusted clustered signed-rank p-values, ``p_adjusted`` Holm's,
        ``mean_difference`` the mean per-target MCC difference over the pair's common targets.
    """
    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    p_values = np.full((m, m), np.nan)
    mean_difference = np.full((m, m), np.nan)
    pair_power = np.full((m, m), np.nan)
    n_clusters = np.zeros((m, m), dtype=np.int64)
    statistic = np.zeros((m, m))
    verdicts = np.full((m, m), UNKNOWN, dtype="<U1")
    reasons = np.full((m, m), "few", dtype="<U5")
    np.fill_diagonal(verdicts, "")
    np.fill_diagonal(reasons, "")
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if pair_data is None:
        pair_data = pair_signed_ranks(table, codes, pairs)
    elif pair_data.pairs != pairs:
        raise ValueError("pair_data was computed for other pairs")
    for k, (a, b) in enumerate(pairs):
        p_values[a, b] = p_values[b, a] = pair_data.pvalue[k]
        diff = pair_data.mean[k]
        mean_difference[a, b], mean_difference[b, a] = diff, -diff
        stat = pair_data.statistic[k]
        statistic[a, b], statistic[b, a] = stat, -stat
        n_clusters[a, b] = n_clusters[b, a] = pair_data.clusters[k]
        se = pair_data.se[k]
        pw = 1.0 if not pair_data.nonzero[k] else detection_power(se, margin=margin, alpha=alpha)
        pair_power[a, b] = pair_power[b, a] = pw
    p_adjusted = np.full((m, m), np.nan)
    if pairs:
        pa, pb = np.array(pairs).T
        adjusted = holm_adjust(p_values[pa, pb])
        p_adjusted[pa, pb] = p_adjusted[pb, pa] = adjusted
        for (a, b), q in zip(pairs, adjusted, strict=True):
            diff, stat = mean_difference[a, b], statistic[a, b]
            if np.isfinite(q) and q < alpha and diff != 0 and np.sign(diff) == np.sign(stat):
                verdicts[a, b], verdicts[b, a] = (WIN, LOSS) if diff > 0 else (LOSS, WIN)
                reasons[a, b] = reasons[b, a] = ""
            elif pair_power[a, b] >= power:
                verdicts[a, b] = verdicts[b, a] = DRAW
                reasons[a, b] = reasons[b, a] = ""
            else:
                reasons[a, b] = reasons[b, a] = "power"
    return _pairwise_result(
        table, verdicts, common=common, p_values=p_values, mean_difference=mean_difference, seed=seed,
        conventions=target_conventions(alpha=alpha, min_common=min_common, margin=margin, power=power),
        p_adjusted=p_adjusted,
        power=pair_power,
        reasons=reasons,
        clusters=n_clusters,
    )


def rank_intervals(
    table: CountsTable,
    *,
    clusters: Sequence[str] | None = None,
    seed: int = 0,
    resamples: int = thresholds.RANK_RESAMPLES,
    confidence: float = thresholds.RANK_CONFIDENCE,
    alpha: float = ALPHA,
    min_common: int = MIN_COMMON,
    pair_data: PairSignedRanks | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each method's rank with a percentile interval from a bootstrap of families (SCIENCE.md §5).

    Every resample draws C families with replacement (one matrix of draws from ``seed`` serves every pair:
    a pair uses the families of its common targets, a family drawn twice counts twice) and recomputes the
    order: per pair the family-summed signed ranks S_c (ranks of the full pairwise set) give T* = Σ w_c S_c
    and the large-sample clustered signed-rank test (Rosner, Glynn & Lee 2006: Var = Σ w_c S_c²), never
    below 2/2^C for C distinct families drawn (the exact test's floor, so that few families cannot make
    wins the primary verdict could not), the p-values are Holm-adjusted across the pairs, wins follow as in
    :func:`target_level_ranking` and the methods get competition ranks. The interval is the
    (1 − confidence)/2 and (1 + confidence)/2 quantiles of each method's rank (inverted CDF: actual ranks).

    ``pair_data`` (:func:`pair_signed_ranks` with ``sums=True`` of the same table, clusters and
    ``min_common``) is computed when not given.

    Returns
    -------
    (low, high) : numpy.ndarray
        int arrays per method.
    """
    from comparna.rna.clustered import _multiplicities

    m, t = len(table.methods), len(table.targets)
    codes = _codes(clusters, t)
    if m == 0 or t == 0:
        return np.ones(m, dtype=np.int64), np.ones(m, dtype=np.int64)
    n_codes = int(codes.max()) + 1
    present = table.present
    common = present.astype(np.int64) @ present.T.astype(np.int64)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if common[a, b] >= min_common]
    if not pairs:
        ranks = np.ones(m, dtype=np.int64)
        return ranks, ranks
    if pair_data is None or pair_data.signed is None:
        pair_data = pair_signed_ranks(table, codes, pairs, sums=True)
    elif pair_data.pairs != pairs:
        raise ValueError("pair_data was computed for other pairs")
    signed, diffs, sizes = pair_data.signed, pair_data.diffs, pair_data.sizes
    squared = signed * signed
    # 0/1 matrices: their products count families (integers below 2^24, exact in float32)
    ranked = (signed != 0).astype(np.float32)
    rng = np.random.default_rng(seed)
    ranks = []
    pa, pb = np.array(pairs).T
    # wins of a resample as a product with the pairs' incidence (exact integer counts)
    first_of = np.zeros((len(pairs), m))
    first_of[np.arange(len(pairs)), pa] = 1.0
    second_of = np.zeros((len(pairs), m))
    second_of[np.arange(len(pairs)), pb] = 1.0
    for weights in _multiplicities(rng, n_codes, resamples):
        stat_all = weights @ signed
        var_all = weights @ squared
        drawn_all = weights @ sizes
        summed_all = weights @ diffs
        # never below what the exact test allows: with C distinct families in the resample, 2 / 2^C
        distinct_all = ((weights > 0).astype(np.float32) @ ranked).astype(np.float64)
        # the rest is row by row: in blocks of resamples, so that its temporaries stay small
        for lo in range(0, weights.shape[0], 128):
            stat, var, drawn = stat_all[lo : lo + 128], var_all[lo : lo + 128], drawn_all[lo : lo + 128]
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(var > 0, stat / np.sqrt(var), 0.0)
                mean = np.where(drawn > 0, summed_all[lo : lo + 128] / drawn, 0.0)
            p = 2 * ndtr(-np.abs(z))
            p = np.maximum(p, np.exp2(1.0 - distinct_all[lo : lo + 128]))
            order = np.argsort(p, axis=1, kind="stable")
            q = np.take_along_axis(p, order, axis=1) * (len(pairs) - np.arange(len(pairs)))
            q = np.minimum(1.0, np.maximum.accumulate(q, axis=1))
            adjusted = np.empty_like(q)
            np.put_along_axis(adjusted, order, q, axis=1)
            win = (adjusted < alpha) & (np.sign(mean) == np.sign(stat)) & (mean != 0)
            wins = (win & (mean > 0)).astype(float) @ first_of + (win & (mean < 0)).astype(float) @ second_of
            ranks.append(1 + (wins[:, None, :] > wins[:, :, None]).sum(axis=2))
    all_ranks = np.concatenate(ranks, axis=0)
    tail = (1 - confidence) / 2
    low = np.quantile(all_ranks, tail, axis=0, method="inverted_cdf").astype(np.int64)
    high = np.quantile(all_ranks, 1 - tail, axis=0, method="inverted_cdf").astype(np.int64)
    return low, high


def decided_scores(table: CountsTable, result: PairwiseRanking) -> list[dict]:
    """Per method, the mean per-target MCC over exactly the targets that decided its place: the union of
    its pairwise sets with a determined verdict (win, loss or draw), with their number (``None`` when it has
    no determined verdict)."""
    scores = per_target_mcc(table)
    out = []
    for i in range(len(table.methods)):
        decided = np.isin(result.verdicts[i], (WIN, LOSS, DRAW))
        decided[i] = False
        targets = table.present[i] & table.present[decided].any(axis=0) if decided.any() else None
        if targets is None or not targets.any():
            out.append({"decided_mcc": None, "decided_targets": 0})
        else:
            out.append(
                {"decided_mcc": float(scores[i, targets].mean()), "decided_targets": int(targets.sum())}
            )
    return out


# ------------------------------------------------------------------------------------ robustness ranking
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
    if reference_pairs is None or candidate_pairs is None:
        reference_pairs, candidate_pairs = target_totals(table)
    empty = np.zeros((len(table.targets), len(COUNT_FIELDS)), dtype=np.int64)
    empty[:, 1] = reference_pairs
    empty[:, 4] = np.asarray(candidate_pairs) - np.asarray(reference_pairs)
    filled = np.where(table.present[..., None], table.counts, empty[None])
    mcc = pooled_mcc(filled)
    return RobustnessRanking(table.methods, mcc, table.present.sum(axis=1), competition_ranks(mcc))


def _rank_one(args: tuple) -> tuple[PairwiseRanking, RobustnessRanking | None]:
    table, seed = args
    try:
        robust = robustness_ranking(table)
    except ValueError:
        robust = None
    return pairwise_ranking(table, seed=seed), robust


def rank_subsets(
    tables: Mapping[str, CountsTable], *, seed: int, workers: int = 1
) -> dict[str, tuple[PairwiseRanking, RobustnessRanking | None]]:
    """CompaRNA 2013 protocol and robustness rankings of several subsets (the benchmark's unit of work).

    Subsets are independent, so with ``workers > 1`` they run in that many processes; the results are the
    same as with one worker. A subset whose robustness ranking cannot be computed (a target without any
    prediction) gets None there.
    """
    names = list(tables)
    jobs = [(tables[name], seed) for name in names]
    if workers <= 1 or len(jobs) <= 1:
        return dict(zip(names, map(_rank_one, jobs), strict=True))
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return dict(zip(names, pool.map(_rank_one, jobs), strict=True))


# ------------------------------------------------------------------------------------------ entry points
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


def format_report(report: Mapping) -> str:
    """A plain-text table of a :func:`ranking_report` view (ranks with their interval, W/L/D/?, the MCC on
    the targets that decided the order with their n, then the verdict matrix), headed by its protocol."""
    methods = [row["method"] for row in report["methods"]]
    width = max([len(name) for name in methods] + [6])
    target_view = report.get("protocol") == "target"
    label = report.get("protocol_label") or thresholds.PROTOCOL_2013_LABEL
    lines = [f"verdicts: {label}"]
    if not target_view:
        lines.append(
            "  (a view to reproduce the 2013 tables: its p-value shrinks with the 40 resamples, not with the "
            "evidence; not the headline)"
        )
    else:
        lines.append(f"  families (clusters): {report.get('clusters')}")
    head = f"{'rank':>4}  {'95% int':>7}  " if target_view else f"{'rank':>4}  "
    tail = (
        f"{'MCC':>6} {'n':>5}  (mean per-target MCC on the targets that decided the order)"
        if target_view
        else f"{'MCC':>6}  targets"
    )
    lines.append(f"{head}{'method':<{width}}  {'wins':>4} {'loss':>4} {'draw':>4} {'?':>4}  {tail}")
    for row in report["methods"]:
        start = f"{row['rank']:>4}  "
        if target_view:
            interval = f"{row.get('rank_low', row['rank'])}-{row.get('rank_high', row['rank'])}"
            start += f"{interval:>7}  "
            value = row.get("decided_mcc")
            n = row.get("decided_targets", 0)
            metric = f"{value:>6.3f} {n:>5}" if value is not None else f"{'-':>6} {0:>5}"
        else:
            metric = f"{row['mcc']:>6.3f}  {row['targets']}"
        lines.append(
            f"{start}{row['method']:<{width}}  {row['wins']:>4} {row['losses']:>4} "
            f"{row['draws']:>4} {row['unknown']:>4}  {metric}"
        )
    lines.append("")
    if target_view:
        lines.append(
            "verdicts (row vs column: + row wins, - row loses, = draw, ? under 10 common targets or too few "
            "to detect the margin)"
        )
    else:
        lines.append("verdicts (row vs column: + row wins, - row loses, = draw, ? under 10 common targets)")
    abbrev = [str(i + 1) for i in range(len(methods))]
    lines.append(" " * (width + 6) + " ".join(f"{a:>3}" for a in abbrev))
    for i, a in enumerate(methods):
        cells = ["  ." if a == b else f"{report['verdicts'][a][b]:>3}" for b in methods]
        lines.append(f"{abbrev[i]:>3}  {a:<{width}} " + " ".join(cells))
    if report.get("robustness"):
        lines.append("")
        lines.append("robustness ranking (missing predictions = no base pairs)")
        for row in report["robustness"]:
            lines.append(f"{row['rank']:>4}  {row['method']:<{width}}  {row['mcc']:>6.3f}  {row['targets']}")
    lines.append("")
    lines.append(f"seed {report['seed']}")
    return "\n".join(lines)


_PRIMARY_KEYS = ("method", "rank", "rank_low", "rank_high", "wins", "decided_mcc", "decided_targets")
_KEYS_2013 = ("method", "rank", "wins", "mcc")


def compare_protocols(report: Mapping, *, top: int = 10) -> list[dict]:
    """The top methods under the primary verdict and under the CompaRNA 2013 protocol, side by side:
    ``[{"position", "target": {method, rank, rank_low, rank_high, wins, decided_mcc, decided_targets},
    "protocol_2013": {method, rank, wins, mcc}}]``."""
    primary = protocol_view(report, "target") or {"methods": []}
    old = protocol_view(report, "2013") or {"methods": []}
    out = []
    for k in range(min(top, max(len(primary["methods"]), len(old["methods"])))):
        a = primary["methods"][k] if k < len(primary["methods"]) else None
        b = old["methods"][k] if k < len(old["methods"]) else None
        out.append(
            {
                "position": k + 1,
                "target": None if a is None else {key: a.get(key) for key in _PRIMARY_KEYS},
                "protocol_2013": None if b is None else {key: b.get(key) for key in _KEYS_2013},
            }
        )
    return out


def format_comparison(rows: Sequence[Mapping]) -> str:
    """:func:`compare_protocols` as a plain-text table."""
    lines = [
        f"{'#':>3}  {'target-level verdict (primary)':<44}  {thresholds.PROTOCOL_2013_LABEL}",
        f"{'':>3}  {'method':<20} {'rank':>4} {'95% int':>7} {'wins':>4} {'MCC(n)':>10}  "
        f"{'method':<20} {'rank':>4} {'wins':>4} {'MCC':>6}",
    ]
    for row in rows:
        a, b = row["target"], row["protocol_2013"]
        left = " " * 55
        if a:
            mcc = "-" if a["decided_mcc"] is None else f"{a['decided_mcc']:.3f}({a['decided_targets']})"
            interval = f"{a['rank_low']}-{a['rank_high']}"
            left = f"{a['method'][:20]:<20} {a['rank']:>4} {interval:>7} {a['wins']:>4} {mcc:>10}"
        right = f"{b['method'][:20]:<20} {b['rank']:>4} {b['wins']:>4} {b['mcc']:>6.3f}" if b else ""
        lines.append(f"{row['position']:>3}  {left}  {right}")
    return "\n".join(lines)
