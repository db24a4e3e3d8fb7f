"""Projection of a consensus structure over alignment columns onto one aligned sequence.

Comparative methods (RNAalifold, a covariance model's consensus) predict pairs between alignment columns.
The query's structure is the set of consensus pairs (c1, c2) whose two columns both hold a query residue,
renumbered to query positions; a pair with a gap on either side is dropped (SCIENCE.md §4; as CompaRNA,
Puton et al., NAR 2013).
"""

from __future__ import annotations

from collections.abc import Iterable

from comparna.rna.stockholm import parse_wuss, residue_columns
from comparna.rna.structure import Structure


def column_to_position(aligned_row: str) -> dict[int, int]:
    """Map each 1-based alignment column holding a residue of ``aligned_row`` to its 1-based position."""
    return {col: pos for pos, col in enumerate(residue_columns(aligned_row), start=1)}


def project_pairs(column_pairs: Iterable[tuple[int, int]], aligned_row: str) -> Structure:
    """Project column pairs onto the sequence in ``aligned_row``.

    Parameters
    ----------
    column_pairs : iterable of (int, int)
        Consensus pairs, 1-based alignment columns.
    aligned_row : str
        The query's aligned row (gap characters ``-._~``).

    Returns
    -------
    Structure
        Over the ungapped query (length = number of residues in the row).
    """
    to_pos = column_to_position(aligned_row)
    pairs = [(to_pos[a], to_pos[b]) for a, b in column_pairs if a in to_pos and b in to_pos]
    return Structure.from_pairs(len(to_pos), pairs)


def project_consensus(consensus: str, aligned_row: str) -> Structure:
    """Project a WUSS / dot-bracket consensus string (one character per column) onto ``aligned_row``."""
    if len(consensus) != len(aligned_row):
        raise ValueError(f"consensus has {len(consensus)} columns, the row {len(aligned_row)}")
    return project_pairs(parse_wuss(consensus), aligned_row)


def project_probabilities(
    column_probabilities: Iterable[tuple[int, int, float]], aligned_row: str, *, min_probability: float = 0.0
) -> list[tuple[int, int, float]]:
    """Project (column, column, probability) triples onto query positions, dropping gapped ones.

    Returns sorted ``(i, j, p)`` with ``i < j`` and ``p > min_probability``.
    """
    to_pos = column_to_position(aligned_row)
    out = []
    for a, b, p in column_probabilities:
        if p > min_probability and a in to_pos and b in to_pos:
            i, j = sorted((to_pos[a], to_pos[b]))
            out.append((i, j, p))
    return sorted(out)
