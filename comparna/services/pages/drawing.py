"""2-D drawings of structures (squiggle plots): the reference of a target, and a prediction with its pairs
marked right (TP), wrong (FP) or missed (FN) against the reference.

A pure function of numbers the page modules compute: coordinates come from :mod:`comparna.rna.layout`
(ViennaRNA's NAVIEW), the colours from :mod:`comparna.services.pages.palette` (the arc diagrams' colour-blind
safe blue / orange / dashed grey, never red against green). Every pair is one ``<line>`` with its class and a
tooltip, so the drawing can be read (and tested) pair by pair.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from comparna.rna.layout import layout_xy
from comparna.services.pages.palette import MISSED, RIGHT, WRONG


@dataclass(frozen=True)
class PairMark:
    """One pair to draw: 1-based i < j, its class (``ref``, ``tp``, ``fp``, ``fn``) and a tooltip."""

    i: int
    j: int
    css: str
    title: str = ""


#: Shown as an <img>, the drawing carries its own style.
DRAWING_STYLE = (
    ".backbone{fill:none;stroke:#556;stroke-width:1.2}"
    "line.pair{stroke-width:2.2;stroke-linecap:round}line.pair:hover{stroke-width:4}"
    f".ref{{stroke:#1b5e9c}}.tp{{stroke:{RIGHT}}}.fp{{stroke:{WRONG}}}"
    f".fn{{stroke:{MISSED};stroke-dasharray:3 2}}"
    "circle.base{fill:#fff;stroke:#889;stroke-width:0.6}"
    "text.base{font:7px monospace;fill:#223;text-anchor:middle;dominant-baseline:central}"
    "text.pos{font:8px sans-serif;fill:#667;text-anchor:middle}"
    "text.legend{font:10px sans-serif;fill:#334}"
)

LEGEND = {
    "ref": "reference pair",
    "tp": "predicted and in the reference (TP)",
    "fp": "predicted, not in the reference (FP)",
    "fn": "in the reference, not predicted (FN)",
}


def structure_drawing_svg(
    sequence: str,
    layout: Sequence[tuple[int, int]],
    marks: Sequence[PairMark],
    *,
    label: str,
    size: int = 460,
    legend: dict[str, str] | None = None,
) -> str:
    """A standalone SVG: the backbone laid out by NAVIEW on the nested part of ``layout`` (the pairs that
    shape the drawing), bases as small circles (with letters when there is room), every pair of ``marks``
    as a line between its bases, and a legend of the classes drawn (``legend`` replaces the texts of
    :data:`LEGEND` for its classes)."""
    texts = LEGEND | (legend or {})
    n = len(sequence)
    xy = layout_xy(n, layout)
    legend_h = 16 * len({m.css for m in marks}) + 8
    if xy:
        xs, ys = [p[0] for p in xy], [p[1] for p in xy]
        span = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
        scale = (size - 40) / span
        ox, oy = 20 - min(xs) * scale, 20 - min(ys) * scale
        pts = [(x * scale + ox, y * scale + oy) for x, y in xy]
    else:
        pts = []
    step = min((((pts[k][0] - pts[k - 1][0]) ** 2 + (pts[k][1] - pts[k - 1][1]) ** 2) ** 0.5
                for k in range(1, len(pts))), default=10.0)
    radius = max(min(step * 0.45, 6.0), 0.8)
    letters = radius >= 3.5
    height = size + legend_h
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" class="structure-2d" viewBox="0 0 {size} {height}" '
        f'width="{size}" height="{height}" role="img" aria-label="{html.escape(label)}">',
        f"<title>{html.escape(label)}</title><style>{DRAWING_STYLE}</style>",
    ]
    if pts:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        out.append(f'<polyline class="backbone" points="{path}"/>')
    for m in sorted(marks, key=lambda m: (m.css != "fn", m.i, m.j)):  # missed pairs under the others
        if not (1 <= m.i <= n and 1 <= m.j <= n):
            continue
        (x1, y1), (x2, y2) = pts[m.i - 1], pts[m.j - 1]
        tip = f"<title>{html.escape(m.title)}</title>" if m.title else ""
        out.append(
            f'<line class="pair {html.escape(m.css)}" data-i="{m.i}" data-j="{m.j}" x1="{x1:.1f}" '
            f'y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}">{tip}</line>'
        )
    for k, (x, y) in enumerate(pts, start=1):
        out.append(f'<circle class="base" cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}"/>')
        if letters:
            out.append(f'<text class="base" x="{x:.1f}" y="{y:.1f}">{html.escape(sequence[k - 1])}</text>')
    tick = next(t for t in (10, 20, 50, 100, 200, 500, 1000, 10**9) if n / t <= 30)
    for pos in [1, *range(tick, n + 1, tick)]:
        x, y = pts[pos - 1]
        out.append(f'<text class="pos" x="{x:.1f}" y="{y - radius - 3:.1f}">{pos}</text>')
    y = size + 10
    for css in ("ref", "tp", "fp", "fn"):
        if any(m.css == css for m in marks):
            out.append(f'<line class="pair {css}" x1="20" y1="{y:.1f}" x2="44" y2="{y:.1f}"/>'
                       f'<text class="legend" x="50" y="{y + 3:.1f}">{html.escape(texts[css])}</text>')
            y += 16
    out.append("</svg>")
    return "".join(out)


def prediction_marks(
    reference: set[tuple[int, int]], predicted: set[tuple[int, int]]
) -> list[PairMark]:
    """Every predicted pair as TP or FP, every reference pair not predicted as FN (exact pairs, as the
    counts on the page: SCIENCE.md §2 without slippage)."""
    marks = []
    for i, j in sorted(predicted):
        right = (i, j) in reference
        what = "predicted, in the reference" if right else "predicted, not in the reference"
        marks.append(PairMark(i, j, "tp" if right else "fp", f"{i}–{j} {what}"))
    for i, j in sorted(reference - predicted):
        marks.append(PairMark(i, j, "fn", f"{i}–{j} in the reference, missed"))
    return marks
