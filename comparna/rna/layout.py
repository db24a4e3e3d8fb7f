"""Coordinates for a 2-D drawing of a secondary structure (the squiggle plot biologists read).

The layout is ViennaRNA's NAVIEW (Bruccoleri & Heinrich, CABIOS 4:167, 1988) through its Python bindings
(``RNA.naview_xy_coordinates``), the algorithm behind RNAplot's and forna's default drawings. NAVIEW lays out
a nested structure, so it is given the largest nested subset of the pairs (each base at most once); the
other pairs (pseudoknots, multiplets) are drawn as chords across that layout by the page.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from comparna.rna.structure import bracket_levels


def layout_pairs(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs the layout is built from: a maximum nested subset of ``pairs`` with no base used twice
    (the first pair of a multiplet, in sorted order, is kept)."""
    used: set[int] = set()
    clean = []
    for i, j in sorted(pairs):
        if i in used or j in used or i == j:
            continue
        used.update((i, j))
        clean.append((i, j))
    return bracket_levels(clean)[0] if clean else []


def dot_bracket_of_nested(length: int, pairs: Iterable[tuple[int, int]]) -> str:
    """Dot-bracket of nested, multiplet-free 1-based pairs (as :func:`layout_pairs` returns them)."""
    chars = ["."] * length
    for i, j in pairs:
        chars[i - 1], chars[j - 1] = "(", ")"
    return "".join(chars)


def layout_xy(length: int, pairs: Iterable[tuple[int, int]]) -> list[tuple[float, float]]:
    """x, y of each base (index 0 = base 1) in NAVIEW's layout of the nested part of ``pairs``.

    Falls back to bases on a circle if NAVIEW returns a non-finite coordinate (it is numerical code; an
    odd structure must never cost the page its drawing).
    """
    import RNA

    if length <= 0:
        return []
    db = dot_bracket_of_nested(length, layout_pairs(pairs))
    coords = RNA.naview_xy_coordinates(db)
    xy = [(float(c.X), float(c.Y)) for c in list(coords)[:length]]
    if len(xy) == length and all(math.isfinite(x) and math.isfinite(y) for x, y in xy):
        return xy
    return [
        (100.0 * math.cos(2 * math.pi * k / length), 100.0 * math.sin(2 * math.pi * k / length))
        for k in range(length)
    ]
