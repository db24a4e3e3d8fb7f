"""Group-sequential verdicts for comparisons on a dataset that grows every week (the PDB set, SCIENCE.md §6).

Each weekly ranking of a growing dataset is a *look* at the same comparison. Testing every look at p < α
would declare a difference that does not exist far more often than α (with 8 looks, about 3 times as
often). The verdict is therefore the group-sequential one: the paired test statistic of each look is
compared with the Lan-DeMets O'Brien-Fleming-type boundary (:func:`comparna.rna.group_sequential.
sequential_boundary`) for the information fractions of the looks so far, t_k = n_k / planned maximum,

- **"different"** — the boundary was crossed at some look (monitoring stops at the first crossing, so the
  verdict then stays, with the look it happened at);
- **"not yet"** — not crossed so far, looks remain (t < 1);
- **"no difference shown"** — the planned maximum was reached without a crossing (the final analysis).

Looks after the first one at t = 1 add nothing (no alpha is left). The unadjusted test of the current look
(p < α) stays available as secondary information.

The paired t statistic of a look (df = n − 1) is put on the z scale the boundary is computed on through its
two-sided p-value, z = Φ⁻¹(1 − p/2)·sign(t) (exact for normal differences), so that small looks are not
anti-conservative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

from comparna.rna.group_sequential import SequentialBoundary, sequential_boundary

__all__ = [
    "DIFFERENT",
    "NOT_YET",
    "NO_DIFFERENCE",
    "SequentialVerdict",
    "z_from_t",
    "first_crossings",
    "sequential_verdict",
]

DIFFERENT, NOT_YET, NO_DIFFERENCE = "different", "not yet", "no difference shown"


def z_from_t(t: np.ndarray | float, df: np.ndarray | float) -> np.ndarray:
    """The standard-normal value with the same two-sided tail probability as Student's t with ``df``."""
    t = np.asarray(t, dtype=np.float64)
    p_half = sps.t.sf(np.abs(t), df)
    return np.sign(t) * -special.ndtri(p_half)


@dataclass(frozen=True)
class SequentialVerdict:
    """The group-sequential reading of a comparison over its looks.

    Attributes
    ----------
    verdict : str
        :data:`DIFFERENT`, :data:`NOT_YET` or :data:`NO_DIFFERENCE`.
    crossed_at : int or None
        0-based look of the first boundary crossing.
    sizes, fractions, z, boundary : numpy.ndarray
        Targets, information fraction, observed z and critical |z| of each look used.
    unadjusted_p : float
        Two-sided p-value of the current (last) look, unadjusted.
    unadjusted_different : bool
        ``unadjusted_p < alpha`` — what the verdict would be without the correction (secondary).
    alpha : float
    method : str
        The boundary, in words.
    """

    verdict: str
    crossed_at: int | None
    sizes: np.ndarray
    fractions: np.ndarray
    z: np.ndarray
    boundary: np.ndarray
    unadjusted_p: float
    unadjusted_different: bool
    alpha: float
    method: str

    @property
    def looks(self) -> int:
        return int(self.sizes.size)

    def as_dict(self) -> dict:
        """JSON-ready (strict JSON: non-finite numbers become None, e.g. a boundary of ∞ before any alpha
        is spent)."""

        def number(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "verdict": self.verdict,
            "crossed_at_look": None if self.crossed_at is None else self.crossed_at + 1,
            "looks": self.looks,
            "targets": int(self.sizes[-1]),
            "fraction": float(self.fractions[-1]),
            "z": number(self.z[-1]),
            "boundary_z": number(self.boundary[-1]),
            "boundary_nominal_p": float(2 * special.ndtr(-self.boundary[-1])),
            "unadjusted_p": number(self.unadjusted_p),
            "unadjusted_different": self.unadjusted_different,
            "alpha": self.alpha,
            "method": self.method,
        }


def _looks(sizes: Sequence[int], planned: int) -> tuple[np.ndarray, np.ndarray, int]:
    n = np.asarray(sizes, dtype=np.int64)
    if n.size == 0 or np.any(np.diff(n) <= 0) or n[0] < 2:
        raise ValueError("look sizes must increase and start at 2 or more targets")
    if planned <= 0:
        raise ValueError("planned maximum must be positive")
    fractions = np.minimum(n / planned, 1.0)
    full = np.flatnonzero(fractions >= 1.0)
    used = int(full[0]) + 1 if full.size else n.size  # looks after the final analysis add nothing
    return n[:used], fractions[:used], used


def first_crossings(
    t_statistics: np.ndarray, sizes: Sequence[int], *, planned: int, alpha: float = 0.05
) -> tuple[np.ndarray, SequentialBoundary]:
    """First look at which each series of paired t statistics crosses the boundary (−1: never), vectorised.

    Parameters
    ----------
    t_statistics : numpy.ndarray
        (looks,) or (series, looks): paired t statistics at each look (NaN: no statistic, not crossed).
    sizes : sequence of int
        Targets at each look, shared by all series.

    Returns
    -------
    (numpy.ndarray, SequentialBoundary)
        0-based look of the first crossing per series (−1 if none), and the boundary of the looks used.
    """
    n, fractions, used = _looks(sizes, planned)
    t = np.atleast_2d(np.asarray(t_statistics, dtype=np.float64))
    if t.shape[1] != len(sizes):
        raise ValueError("one statistic per look")
    t = t[:, :used]
    z = np.where(np.isnan(t), 0.0, z_from_t(np.nan_to_num(t), n - 1))
    bound = sequential_boundary(fractions, alpha=alpha)
    hit = np.abs(z) >= bound.z
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    return first, bound


def sequential_verdict(
    t_statistics: Sequence[float],
    sizes: Sequence[int],
    *,
    planned: int,
    alpha: float = 0.05,
) -> SequentialVerdict:
    """Group-sequential verdict from the paired t statistics of every look so far.

    Parameters
    ----------
    t_statistics : sequence of float
        Paired t statistic at each look, in time order (NaN for a look without a statistic: not crossed).
    sizes : sequence of int
        Common targets at each look (strictly increasing); df = n − 1.
    planned : int
        Planned maximum number of targets (information fraction = n / planned, capped at 1).
    """
    t_all = np.asarray(t_statistics, dtype=np.float64)
    if t_all.ndim != 1 or t_all.size != len(sizes):
        raise ValueError("one statistic per look, at least one look")
    first, bound = first_crossings(t_all, sizes, planned=planned, alpha=alpha)
    used = bound.z.size
    n = np.asarray(sizes, dtype=np.int64)[:used]
    t = t_all[:used]
    z = np.where(np.isnan(t), 0.0, z_from_t(np.nan_to_num(t), n - 1))
    crossed_at = int(first[0]) if first[0] >= 0 else None
    if crossed_at is not None:
        verdict = DIFFERENT
    elif bound.fractions[-1] >= 1.0:
        verdict = NO_DIFFERENCE
    else:
        verdict = NOT_YET
    last_t, last_n = float(t_all[-1]), int(sizes[-1])
    p = float(2 * sps.t.sf(abs(last_t), last_n - 1)) if not np.isnan(last_t) else float("nan")
    return SequentialVerdict(
        verdict, crossed_at, n, bound.fractions, z, bound.z, p, bool(p < alpha), alpha, bound.describe()
    )
