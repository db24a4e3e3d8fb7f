"""The CompaRNA 2013 replicate protocol (Puton et al., NAR 2013, doi:10.1093/nar/gkt101): kept as a clearly
labelled view to reproduce the paper's tables, never the headline (SCIENCE.md §5).

For every pair of methods with at least ``min_common`` (10) common targets:

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

import functools
import hashlib
import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np
from scipy.special import ndtr

from comparna.rna import thresholds
from comparna.rna.counts_table import ALPHA, DRAW, LOSS, MIN_COMMON, UNKNOWN, WIN, CountsTable
from comparna.rna.metrics import mcc_from_arrays
from comparna.rna.ranking_result import (
    PairwiseRanking,
    RobustnessRanking,
    pairwise_result,
    robustness_ranking,
)

REPLICATES = thresholds.REPLICATES_2013
FRACTION = thresholds.FRACTION_2013


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
    chunk_pairs: int = 32,
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
    chunk_pairs : int
        Pairs whose exclusion draws are sorted together (the same result for any value; 32 bounds the
        draws' temporaries to ~30 MB at 8000 targets, 256 took ~400 MB and was no faster).

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
    return pairwise_result(
        table, verdicts, common=common, p_values=p_values, mean_difference=mean_difference, seed=seed,
        conventions=engine_conventions(
            replicates=replicates, fraction=fraction, alpha=alpha, min_common=min_common
        ),
    )

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
