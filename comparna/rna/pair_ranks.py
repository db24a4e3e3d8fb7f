"""Per pair of methods, what the target-level verdicts and the rank intervals read off its common targets: the
per-target MCC differences, their family-summed signed ranks (the clustered Wilcoxon signed-rank statistic of
Rosner, Glynn & Lee, Biometrics 2003/2006), the mean difference and its family-robust spread, for every pair
at once (SCIENCE.md §5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from comparna.rna import thresholds
from comparna.rna import verdict_statistics as vs
from comparna.rna.clustered import ZERO_TOLERANCE, cluster_codes
from comparna.rna.counts_table import CountsTable
from comparna.rna.metrics import mcc_from_arrays


def per_target_mcc(table: CountsTable) -> np.ndarray:
    """(methods, targets) MCC of every prediction (compatible FPs neutral; meaningless where absent)."""
    return mcc_from_arrays(*np.moveaxis(table.counts.astype(np.float64), -1, 0))


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
        (P,) the clustered signed-rank test of the per-target MCC differences a − b with the families of the
        targets: two-sided p under the exact family sign-flip null
        (:func:`comparna.rna.verdict_statistics.pair_pvalues`) and T = Σ sign(d)·rank(|d|).
    method : numpy.ndarray
        (P,) str, how each p was computed; ``"undecided"`` when it could not be placed on one side of a
        threshold of ``band``.
    mean : numpy.ndarray
        (P,) mean difference a − b over the common targets.
    nonzero : numpy.ndarray
        (P,) bool: some difference is not exactly 0.
    se : numpy.ndarray
        (P,) the CR1 family-robust standard error of the mean difference (NaN with one family).
    clusters, n : numpy.ndarray
        (P,) int, families among the common targets and the common targets.
    low, high : numpy.ndarray
        (P,) the family-clustered interval of the mean difference at ``confidence`` (the equivalence test's).
    hl, hl_low, hl_high : numpy.ndarray
        (P,) the Hodges–Lehmann shift with its family-clustered interval (NaN when not asked for).
    signed, diffs, sizes : numpy.ndarray or None
        (families, P) float64 per family: the summed signed average ranks, the summed differences and the
        number of common targets (only when asked for: the rank intervals resample them).
    """

    pairs: list[tuple[int, int]]
    pvalue: np.ndarray
    statistic: np.ndarray
    method: np.ndarray
    mean: np.ndarray
    nonzero: np.ndarray
    se: np.ndarray
    clusters: np.ndarray
    n: np.ndarray
    low: np.ndarray
    high: np.ndarray
    hl: np.ndarray
    hl_low: np.ndarray
    hl_high: np.ndarray
    signed: np.ndarray | None = None
    diffs: np.ndarray | None = None
    sizes: np.ndarray | None = None


#: Bits of a rank key below the rounded |d| (×1e12, at most 2·10^12 < 2^41): the target's column.
_ROUNDED_BITS = 41
#: Elements (pairs × targets) per block of :func:`pair_signed_ranks`: bounds its memory to ~50 MB.
_PAIR_BLOCK = 1 << 19


def pair_signed_ranks(
    table: CountsTable,
    codes: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    *,
    sums: bool = False,
    alpha: float = thresholds.ALPHA,
    confidence: float = thresholds.EQUIVALENCE_CONFIDENCE,
    effects: bool = True,
) -> PairSignedRanks:
    """The clustered signed-rank test, the effect sizes and the family sums of every pair at once.

    The differences of a block of pairs are ranked by one row-wise sort of integer keys (rounded |d| above
    the column), ties get their average rank, and the signed ranks, differences and counts are summed per
    family with one ``bincount`` over (pair, family) bins: the same ranks and family sums as
    :func:`comparna.rna.clustered.clustered_signed_rank_test` computes pair by pair. Each pair's p-value is
    then taken from the exact sign-flip null, exactly wherever the Holm threshold that decides the pair is
    near (:func:`comparna.rna.verdict_statistics.pair_pvalues`, over all the pairs at once).

    Parameters
    ----------
    table : CountsTable
    codes : numpy.ndarray
        int family code (0 … C−1) of every target of the table.
    pairs : sequence of (int, int)
    sums : bool
        Also return the per-family sums the rank intervals resample (:attr:`PairSignedRanks.signed` …).
    alpha : float
        The verdicts' α: with P pairs, p is resolved exactly across [α/P, α].
    confidence : float
        Of the clustered interval of the mean difference (0.90: two one-sided tests at 5 %).
    effects : bool
        Also compute the Hodges–Lehmann shifts with their family-clustered intervals.
    """
    t = len(table.targets)
    n_pairs = len(pairs)
    n_codes = int(codes.max()) + 1 if t else 0
    out = {
        "pvalue": np.full(n_pairs, np.nan),
        "statistic": np.zeros(n_pairs),
        "method": np.full(n_pairs, "", dtype=object),
        "mean": np.full(n_pairs, np.nan),
        "nonzero": np.zeros(n_pairs, dtype=bool),
        "se": np.full(n_pairs, np.nan),
        "clusters": np.zeros(n_pairs, dtype=np.int64),
        "n": np.zeros(n_pairs, dtype=np.int64),
        **{name: np.full(n_pairs, np.nan) for name in ("low", "high", "hl", "hl_low", "hl_high")},
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
    pair_sums: list[np.ndarray] = []
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
        c_codes = codes[c_col]
        c_bins = c_row * n_codes + c_codes
        sizes = np.bincount(c_bins, minlength=rows * n_codes).reshape(rows, n_codes)
        bounds = np.concatenate(([0], np.cumsum(common.sum(axis=1))))
        means = np.array([d_all[bounds[k] : bounds[k + 1]].mean() for k in range(rows)])
        residual = np.bincount(c_bins, weights=d_all - means[c_row], minlength=rows * n_codes)
        residual = residual.reshape(rows, n_codes)
        for k in range(rows):
            p = start + k
            local = rank_sums[k][ranked[k]]
            d_k, codes_k = d_all[bounds[k] : bounds[k + 1]], c_codes[bounds[k] : bounds[k + 1]]
            pair_sums.append(local)
            out["statistic"][p] = float(local.sum()) / 2
            out["mean"][p] = means[k]
            out["nonzero"][p] = bool(np.any(d_k))
            out["n"][p] = d_k.size
            out["low"][p], out["high"][p] = vs.mean_interval(d_k, codes_k, confidence=confidence)
            if effects:
                out["hl"][p], out["hl_low"][p], out["hl_high"][p] = vs.hodges_lehmann(
                    d_k, codes_k, confidence=thresholds.EFFECT_CONFIDENCE
                )
            in_pair = sizes[k] > 0
            n_fam = int(in_pair.sum())
            out["clusters"][p] = n_fam
            if n_fam >= 2:
                r = residual[k][in_pair]
                out["se"][p] = float(np.sqrt(n_fam / (n_fam - 1) * np.sum(r**2)) / d_k.size)
        if sums:
            out["signed"][:, start : start + rows] = rank_sums.T / 2
            out["diffs"][:, start : start + rows] = (
                np.bincount(c_bins, weights=d_all, minlength=rows * n_codes).reshape(rows, n_codes).T
            )
            out["sizes"][:, start : start + rows] = sizes.T
    out["pvalue"], out["method"], _, _ = vs.pair_pvalues(pair_sums, alpha=alpha)
    return PairSignedRanks(list(pairs), **out)


def pair_effects(
    table: CountsTable, codes: np.ndarray, pairs: Sequence[tuple[int, int]], *,
    confidence: float = thresholds.EFFECT_CONFIDENCE,
) -> np.ndarray:
    """(P, 3) Hodges–Lehmann shift a − b with its family-clustered interval of some pairs (one at a time: for
    the pairs :func:`pair_signed_ranks` left out under the effect budget)."""
    scores = per_target_mcc(table)
    out = np.full((len(pairs), 3), np.nan)
    for k, (a, b) in enumerate(pairs):
        common = table.present[a] & table.present[b]
        if common.any():
            d = scores[a, common] - scores[b, common]
            out[k] = vs.hodges_lehmann(d, codes[common], confidence=confidence)
    return out
