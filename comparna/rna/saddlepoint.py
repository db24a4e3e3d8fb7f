"""The saddlepoint approximation of the family sign-flip null (Lugannani–Rice; issue 35).

X = Σ_c k_c-fold ε_c a_c (a family of multiplicity k: k independent flips), K(t) = Σ_c k_c log cosh(t a_c).
:func:`saddlepoint_pvalues` solves K'(t) = |T| − span/2 over every family explicitly;
:func:`series_saddlepoint_pvalues` does the same for many (resample, pair) cells at once with the small
families of a pair summarised by their power sums (log cosh x = Σ_j c_j x^{2j}, |x| < π/2), so that a
cell costs its few large families plus a few matrix products shared by every cell. Used by
:mod:`comparna.rna.signflip` only outside the widened decision band (never to decide a verdict).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: The smallest p ever reported.
TINY = float(np.finfo(float).tiny)
_LOG_TINY = math.log(TINY)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _logcosh(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2 * ax)) - math.log(2)


def _sech2(x: np.ndarray) -> np.ndarray:
    e = np.exp(-2 * np.abs(x))
    return 4 * e / (1 + e) ** 2


def _newton(t: np.ndarray, a: np.ndarray, k: np.ndarray, y: np.ndarray) -> None:
    """Solve K'(t) = Σ_c k_c a_c tanh(t a_c) = y in place from below (K' is concave on t ≥ 0: the Newton
    iterates rise monotonically to the root). The rows still iterating are packed together whenever fewer
    than half remain, so late iterations cost only what they touch."""
    todo = np.arange(t.size)
    ak, a2k, tt, yy = k * a, k * a * a, t.copy(), y
    aa = a
    for _ in range(200):
        # one exponential per element: e = exp(−2ta), tanh = (1 − e)/(1 + e), sech² = 4e/(1 + e)²
        e = np.exp(-2 * tt[:, None] * aa)
        inv = 1 / (1 + e)
        first = np.einsum("ij,ij->i", ak, (1 - e) * inv)
        second = np.einsum("ij,ij->i", a2k, 4 * e * inv * inv)
        step = (yy - first) / second
        tt += step
        going = step > 1e-11 * tt  # also stops on NaN
        t[todo] = tt
        if not going.any():
            return
        if going.sum() * 2 < going.size:
            todo, tt, yy = todo[going], tt[going], yy[going]
            aa, ak, a2k = aa[going], ak[going], a2k[going]


def _lugannani_rice(
    t: np.ndarray, y: np.ndarray, kx: np.ndarray, k2: np.ndarray, h: np.ndarray, var: np.ndarray
) -> np.ndarray:
    """Two-sided p = 2·[Φ̄(w) + φ(w)(1/u − 1/w)] at the saddlepoint t of the corrected point y (K(t) = kx,
    K''(t) = k2, lattice span h): w = √(2(t y − K)), u = 2 sinh(t h/2) √K'' / h (Daniels 1987), in logs
    (never below :data:`TINY`); below w = 1e-3 the normal tail of y stands in (p > 0.99 there)."""
    w = np.sqrt(np.maximum(0.0, 2 * (t * y - kx)))
    half = t * h / 2
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        # log u = log(2 sinh(t h/2)) + ½ log K'' − log h
        log_u = half + np.log1p(-np.exp(-2 * half)) + 0.5 * np.log(k2) - np.log(h)
        mills = 0.5 * special.erfcx(w / math.sqrt(2)) * math.sqrt(2 * math.pi)  # Φ̄(w)/φ(w)
        bracket = mills + np.exp(-log_u) - 1 / w
        log_p = math.log(2) - w * w / 2 - _HALF_LOG_2PI + np.log(bracket)
        out = np.where(np.isfinite(log_p), np.exp(np.maximum(log_p, _LOG_TINY)), TINY)
    small = w < 1e-3
    if small.any():
        out[small] = special.erfc(y[small] / np.sqrt(2 * var[small]))
    return np.clip(out, TINY, 1.0)


def saddlepoint_pvalues(
    absolute: np.ndarray, mult: np.ndarray, observed: np.ndarray, span: np.ndarray | float = 2.0
) -> np.ndarray:
    """Lugannani–Rice two-sided p = 2·P(X ≥ T) of X = Σ_c ε_c a_c (a family of multiplicity k: k flips).

    Parameters
    ----------
    absolute : numpy.ndarray
        (n, F) or (F,) the |S_c| (shared by every cell when 1-D).
    mult : numpy.ndarray
        (n, F) multiplicities (0 leaves a family out).
    observed : numpy.ndarray
        (n,) |T| of each cell (on the lattice of X).
    span : float or (n,)
        Lattice span of X (2·gcd of the |S_c|): the continuity-corrected point is |T| − span/2.

    The saddlepoint t solves K'(t) = Σ k_c a_c tanh(t a_c) = |T| − span/2 by Newton's method from t = 0
    (K' is concave on t ≥ 0, so the iterates rise monotonically to the root). Cells whose corrected point is
    ≤ 0 get p = 1; below w = 1e-3 (p > 0.99) the normal tail of the corrected point stands in for the
    removable singularity of the formula.
    """
    a = np.asarray(absolute, dtype=np.float64)
    k = np.asarray(mult, dtype=np.float64)
    y = np.asarray(observed, dtype=np.float64) - np.asarray(span, dtype=np.float64) / 2
    n = k.shape[0]
    p = np.ones(n)
    top = (k * a).sum(axis=1)
    var = (k * a * a).sum(axis=1)
    live = (y > 0) & (var > 0) & (y < top)
    if not live.any():
        return p
    idx = np.flatnonzero(live)
    aa = np.broadcast_to(a, k.shape)[idx] if a.ndim == 1 else a[idx]
    kk, yy = k[idx], y[idx]
    t = yy / var[idx]  # the first Newton step from t = 0
    _newton(t, aa, kk, yy)
    at = t[:, None] * aa
    kx = (kk * _logcosh(at)).sum(axis=1)
    k2 = (kk * (aa * aa) * _sech2(at)).sum(axis=1)
    h = np.broadcast_to(np.asarray(span, dtype=np.float64), (n,))[idx]
    out = _lugannani_rice(t, yy, kx, k2, h, var[idx])
    p[idx] = out
    return p




def _logcosh_coefficients(terms: int) -> np.ndarray:
    """c_j of log cosh x = Σ_{j≥1} c_j x^{2j} = Σ 2^{2j}(2^{2j} − 1) B_{2j} / (2j (2j)!) x^{2j}."""
    b = special.bernoulli(2 * terms)
    return np.array([2 ** (2 * j) * (2 ** (2 * j) - 1) * b[2 * j] / (2 * j * math.factorial(2 * j))
                     for j in range(1, terms + 1)])


#: Terms of the log cosh series for the small families (the 7th would change K by < 2e-8 relative at 0.5).
SERIES_TERMS = 6
_C = _logcosh_coefficients(SERIES_TERMS + 1)
#: |c_{J+1}|: bounds the omitted tail of the alternating series (ending on a negative term) from above.
_C_NEXT = float(abs(_C[-1]))
_C = _C[:-1]
#: A pair's largest families (at most MAX_BIG) are explicit until the largest of the rest is at most
#: BIG × the rest's root sum of squares; the series is trusted while t·|S_c| ≤ REACH for every small family.
BIG = 0.07
MAX_BIG = 64
REACH = 0.5
#: Cells × large families per block of the series saddlepoint.
_BLOCK = 1 << 21
#: Families × pairs per block of pairs (the per-pair sorting and power sums).
_PAIR_ELEMENTS = 1 << 20


def series_saddlepoint_pvalues(
    absolute: np.ndarray,
    weights: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    observed: np.ndarray,
    span: np.ndarray,
    *,
    settle_below: float = 0.0,
) -> np.ndarray:
    """Lugannani–Rice p of the cells (rows[i], cols[i]) of a family bootstrap, as
    :func:`saddlepoint_pvalues` of each cell's families, at a cost nearly independent of their number.

    Parameters
    ----------
    absolute : numpy.ndarray
        (F, P) |S_c| per family and pair.
    weights : numpy.ndarray
        (R, F) multiplicities of the families in each resample.
    rows, cols : numpy.ndarray
        The cells (resample, pair) wanted.
    observed : numpy.ndarray
        |T| of each cell.
    span : numpy.ndarray
        (P,) lattice span of each pair.

    In units of σ_p = √Σ_c S_cp² the families with |S_c| ≤ BIG·σ_p enter K(τ) only through the power
    sums M_j = Σ_c k_c (|S_c|/σ_p)^{2j} — one matrix product per j for every cell at once —
    K_small(τ) = Σ_j c_j τ^{2j} M_j, exact to ~1e-7 while τ·BIG ≤ REACH; the larger families (at most
    1/BIG² per pair) are summed explicitly. Newton from the left as in :func:`saddlepoint_pvalues`. A cell
    whose saddlepoint lies beyond the series' reach gets the Chernoff bound 2·exp(K(τ) − τ·y) at the reach
    (rigorous: K there is the series plus a bound of its first omitted term) when that is below
    ``settle_below``; else it is recomputed by :func:`saddlepoint_pvalues` over all its families.
    """
    a = np.asarray(absolute, dtype=np.float64)
    wf = np.asarray(weights, dtype=np.float64)
    out = np.ones(rows.size)
    if rows.size == 0:
        return out
    # pairs a block at a time: the per-pair arrays (families × pairs) stay ~10 MB whatever the matrix
    pairs = np.unique(cols)
    step = max(1, _PAIR_ELEMENTS // max(1, a.shape[0]))
    if pairs.size > step:
        observed = np.asarray(observed, dtype=np.float64)
        for lo in range(0, pairs.size, step):
            pick = np.flatnonzero(np.isin(cols, pairs[lo : lo + step]))
            out[pick] = series_saddlepoint_pvalues(a, wf, rows[pick], cols[pick], observed[pick], span,
                                                   settle_below=settle_below)
        return out
    used, local = np.unique(cols, return_inverse=True)
    sub = a[:, used]
    # per pair the K largest families are explicit, K the least (≤ MAX_BIG) with the largest of the rest at
    # most BIG × the rest's root sum of squares σ_p (the unit of t below); r_p = that largest / σ_p
    order = np.argsort(-sub, axis=0, kind="stable")
    desc = np.take_along_axis(sub, order, axis=0)
    suffix = np.vstack([np.cumsum((desc * desc)[::-1], axis=0)[::-1], np.zeros((1, used.size))])
    head = min(MAX_BIG, sub.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = desc[: head + 1] / np.sqrt(suffix[: head + 1]) if head < sub.shape[0] else None
    if ratio is None:
        count = np.full(used.size, sub.shape[0])
    else:
        fits = ratio <= BIG
        count = np.where(fits.any(axis=0), fits.argmax(axis=0), head)
    sigma = np.sqrt(suffix[count, np.arange(used.size)])
    first_small = desc[np.minimum(count, sub.shape[0] - 1), np.arange(used.size)]
    largest = np.where(count < sub.shape[0], first_small, 0.0)
    sigma = np.where(sigma > 0, sigma, np.sqrt((sub * sub).sum(axis=0)))
    sigma[sigma == 0] = 1.0
    reach = np.where(largest > 0, REACH * sigma / np.maximum(largest, 1e-300), np.inf)  # the limit of τ
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(sub.shape[0])[:, None], axis=0)
    big = rank < count[None, :]
    scaled = sub / sigma
    small = np.where(big, 0.0, scaled)
    moments = np.empty((SERIES_TERMS, rows.size))
    power = small * small
    for j in range(SERIES_TERMS):
        moments[j] = (wf @ power)[rows, local]
        power = power * small * small
    width = max(1, int(count.max()))
    # per pair its large families, padded with a dummy family F (|S| = 0, never drawn)
    index = np.full((used.size, width), a.shape[0], dtype=np.int64)
    pair, fam = np.nonzero(big.T)
    slot = np.arange(fam.size) - np.repeat(np.cumsum(count) - count, count)
    index[pair, slot] = fam
    scaled_ext = np.vstack([scaled, np.zeros((1, used.size))])
    w_ext = np.hstack([wf, np.zeros((wf.shape[0], 1))])
    y = (np.asarray(observed, dtype=np.float64) - span[cols] / 2) / sigma[local]
    h = span[cols] / sigma[local]
    order = np.argsort(count[local], kind="stable")  # cells of pairs with few large families together
    fallback: list[int] = []
    start = 0
    while start < order.size:
        step = max(1, _BLOCK // max(1, int(count[local[order[start]]])))
        stop = min(order.size, start + step)
        nb = max(1, int(count[local[order[stop - 1]]]))
        cells = order[start:stop]
        idx = index[local[cells], :nb]
        ab = scaled_ext[idx, local[cells][:, None]]
        kb = w_ext[rows[cells][:, None], idx]
        out[cells], bad = _series_block(ab, kb, moments[:, cells], y[cells], h[cells], reach[local[cells]],
                                        settle_below)
        fallback.extend(cells[bad].tolist())
        start = stop
    if fallback:  # beyond the series' reach: every family explicitly, in blocks
        f = np.array(fallback)
        step = max(1, _BLOCK // max(1, a.shape[0]))
        for lo in range(0, f.size, step):
            k = f[lo : lo + step]
            out[k] = saddlepoint_pvalues(a[:, cols[k]].T, wf[rows[k]], np.asarray(observed)[k], span[cols[k]])
    return out


def _series_block(ab, kb, moments, y, h, limit, settle_below) -> tuple[np.ndarray, np.ndarray]:
    """p of a block of cells (large families explicit, small ones by their power sums) and the cells
    whose saddlepoint lies beyond the series' reach and whose Chernoff bound there is not below
    ``settle_below``."""
    j = np.arange(1, SERIES_TERMS + 1)[:, None]
    c1 = (2 * j * _C[:, None]) * moments  # K'_small = Σ c1_j τ^{2j−1}
    c2 = (2 * j * (2 * j - 1) * _C[:, None]) * moments  # K''_small = Σ c2_j τ^{2j−2}
    var = (kb * ab * ab).sum(axis=1) + moments[0]
    p = np.ones(y.size)
    live = (y > 0) & (var > 0)
    limit = np.minimum(limit, 1e6)
    tau = np.where(live, np.minimum(y / np.where(var > 0, var, 1.0), limit), 0.0)
    akb, a2kb = kb * ab, kb * ab * ab
    going = live.copy()
    for _ in range(100):
        if not going.any():
            break
        g = np.flatnonzero(going)
        t = tau[g]
        e = np.exp(-2 * t[:, None] * ab[g])
        inv = 1 / (1 + e)
        powers = t[None, :] ** (2 * j - 2)  # τ^{2j−2}
        first = np.einsum("ij,ij->i", akb[g], (1 - e) * inv) + (c1[:, g] * powers * t).sum(axis=0)
        second = np.einsum("ij,ij->i", a2kb[g], 4 * e * inv * inv) + (c2[:, g] * powers).sum(axis=0)
        stepped = t + (y[g] - first) / second
        tau[g] = np.clip(stepped, 0.0, 2 * limit[g])
        going[g] = (np.abs(stepped - t) > 1e-11 * stepped) & (stepped < 2 * limit[g]) & (stepped > 0)
    converged = (tau > 0) & (tau <= limit) & ~going
    bad = live & ~converged
    if bad.any() and settle_below > 0:
        b = np.flatnonzero(bad)
        lb = limit[b]
        upper = (kb[b] * _logcosh(lb[:, None] * ab[b])).sum(axis=1) + (_C[:, None] * moments[:, b]
                                                                        * lb ** (2 * j)).sum(axis=0)
        upper += _C_NEXT * REACH ** (2 * SERIES_TERMS) * lb**2 * moments[0, b]  # the omitted terms
        bound = 2 * np.exp(upper - lb * y[b])
        settled = bound < settle_below
        p[b[settled]] = np.maximum(bound[settled], TINY)
        bad[b[settled]] = False
    ok = np.flatnonzero(live & ~bad)
    t = tau[ok]
    at = t[:, None] * ab[ok]
    powers = t[None, :] ** (2 * j - 2)
    kx = (kb[ok] * _logcosh(at)).sum(axis=1) + (_C[:, None] * moments[:, ok] * powers * t * t).sum(axis=0)
    k2 = (a2kb[ok] * _sech2(at)).sum(axis=1) + (c2[:, ok] * powers).sum(axis=0)
    p[ok] = _lugannani_rice(t, y[ok], kx, k2, h[ok], var[ok])
    return p, bad
