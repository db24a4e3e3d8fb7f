"""Group-sequential boundaries for the weekly-growing PDB set (SCIENCE.md §6): Lan & DeMets (1983) alpha
spending with the O'Brien-Fleming-type function, computed by the Armitage-McPherson-Rowe recursive
integration. :mod:`comparna.rna.sequential` turns the boundaries into verdicts over the looks of a comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special


def obrien_fleming_spending(t: np.ndarray | float, alpha: float = 0.05) -> np.ndarray:
    """Cumulative two-sided alpha spent by information fraction t, O'Brien-Fleming type (Lan & DeMets 1983).

    Each side spends ``α₁(t) = 2 − 2Φ(z_{1−α₁/2} / √t)`` with α₁ = α/2, as in the R packages ldbounds,
    gsDesign (sfLDOF) and rpact; the two-sided total is ``2·α₁(t)``, which reaches α at t = 1.
    """
    t = np.asarray(t, dtype=np.float64)
    side = alpha / 2
    with np.errstate(divide="ignore"):
        per_side = 2 - 2 * special.ndtr(special.ndtri(1 - side / 2) / np.sqrt(np.where(t > 0, t, 1.0)))
    return np.where(t > 0, 2 * per_side, 0.0)


@dataclass(frozen=True)
class SequentialBoundary:
    """Two-sided group-sequential boundaries on the z scale for looks at given information fractions.

    Attributes
    ----------
    fractions : numpy.ndarray
        Information fraction of each look, increasing, in (0, 1].
    z : numpy.ndarray
        Critical |z| at each look (inf where no alpha is spent); reject at look k if |Z_k| >= z[k].
    spent : numpy.ndarray
        Cumulative alpha spent up to each look.
    alpha : float
    """

    fractions: np.ndarray
    z: np.ndarray
    spent: np.ndarray
    alpha: float

    @property
    def nominal_p(self) -> np.ndarray:
        """Two-sided nominal p-value thresholds equivalent to ``z``."""
        return 2 * special.ndtr(-self.z)

    def crossed(self, look: int, z: float) -> bool:
        """Whether a test statistic ``z`` at look ``look`` (0-based) crosses the boundary."""
        return bool(abs(z) >= self.z[look])

    def describe(self) -> str:
        """The method, in words, for the web page."""
        return (
            f"Group-sequential testing: two-sided, overall type-I error {self.alpha:g} spread over repeated "
            "weekly looks with the Lan-DeMets alpha-spending function of O'Brien-Fleming type, applied to "
            "each side with α/2: α₁(t) = 2 − 2Φ(z_{1−α/4}/√t), t = the information fraction (targets so "
            "far / planned maximum). Boundaries by recursive numerical integration (Armitage, McPherson & "
            "Rowe 1969). "
            f"{len(self.z)} look(s); the current look needs |z| ≥ {self.z[-1]:.3f} "
            f"(nominal p < {self.nominal_p[-1]:.2g}) instead of {special.ndtri(1 - self.alpha / 2):.3f}."
        )


def _simpson_weights(points: int, step: float) -> np.ndarray:
    w = np.ones(points)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return w * step / 3


def sequential_boundary(
    fractions: Sequence[float] | np.ndarray, *, alpha: float = 0.05, grid: int = 401
) -> SequentialBoundary:
    """Lan-DeMets O'Brien-Fleming-type boundaries for looks at the given information fractions.

    The boundary at look k spends ``α(t_k) − α(t_{k−1})``: with the score statistic ``S_k = Z_k·√t_k``
    (independent normal increments of variance ``t_k − t_{k−1}``), the sub-density of S over the region
    where no earlier boundary was crossed is propagated by Simpson quadrature and ``c_k`` solves
    ``P(no earlier crossing, |S_k| ≥ c_k·√t_k) = α(t_k) − α(t_{k−1})`` (Lan & DeMets 1983; Jennison &
    Turnbull 2000, ch. 19). Fractions above 1 are clipped to 1 (no alpha is left after the planned maximum).

    Parameters
    ----------
    fractions : sequence of float
        Information fractions of the looks so far, strictly increasing, > 0.
    alpha : float
        Overall two-sided type-I error.
    grid : int
        Odd number of quadrature points per look.
    """
    t = np.minimum(np.asarray(fractions, dtype=np.float64), 1.0)
    if t.size == 0 or t[0] <= 0 or np.any(np.diff(t) < 0):
        raise ValueError("information fractions must be positive and non-decreasing")
    grid += 1 - grid % 2
    cumulative = obrien_fleming_spending(t, alpha)
    z = np.empty(t.size)
    # look 1: S_1 ~ N(0, t_1)
    z[0] = special.ndtri(1 - cumulative[0] / 2) if cumulative[0] > 0 else np.inf
    nodes, density = _continuation(z[0] * np.sqrt(t[0]), None, None, t[0], grid)
    previous_t = t[0]
    for k in range(1, t.size):
        spend = cumulative[k] - cumulative[k - 1]
        step_var = t[k] - previous_t
        if step_var <= 0:
            z[k] = z[k - 1]
            continue
        sd = np.sqrt(step_var)
        weights = density

        def exceed(bound: float, nodes=nodes, weights=weights, sd=sd) -> float:
            upper = special.ndtr((nodes - bound) / sd)  # P(S_k >= bound | u)
            lower = special.ndtr((-bound - nodes) / sd)
            return float(np.dot(weights, upper + lower))

        if spend <= 1e-15:
            bound = np.inf
        else:
            hi = 40.0 * np.sqrt(t[k])
            bound = optimize.brentq(lambda b, spend=spend: exceed(b) - spend, 1e-9, hi, xtol=1e-12)
        z[k] = bound / np.sqrt(t[k])
        nodes, density = _continuation(bound, nodes, weights, step_var, grid)
        previous_t = t[k]
    return SequentialBoundary(t, z, cumulative, alpha)


def _continuation(bound: float, nodes, weights, step_var: float, grid: int):
    """Quadrature nodes on (−bound, bound) and the sub-density there times the quadrature weights."""
    sd = np.sqrt(step_var)
    limit = min(bound, 12.0 * np.sqrt(step_var) + (np.abs(nodes).max() if nodes is not None else 0.0))
    new_nodes = np.linspace(-limit, limit, grid)
    quad = _simpson_weights(grid, new_nodes[1] - new_nodes[0])
    if nodes is None:
        pdf = np.exp(-0.5 * (new_nodes / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    else:
        diff = (new_nodes[:, None] - nodes[None, :]) / sd
        pdf = (np.exp(-0.5 * diff * diff) / (sd * np.sqrt(2 * np.pi))) @ weights
    return new_nodes, pdf * quad
