"""The site's colours: 12 categorical colours told apart with every common colour-vision deficiency.

Chosen from Okabe & Ito's and Paul Tol's colour-blind-safe schemes so that any two differ by at least
20 CIELAB ΔE*ab in normal vision and under simulated protanopia, deuteranopia and tritanopia (Machado et al.
2009, severity 1; checked in tests/unit/test_palette.py), and none is too pale to see on white. Past 12 series
the colours repeat with another dash and marker symbol, so no two series look alike.
"""

from __future__ import annotations

PALETTE: tuple[str, ...] = (
    "#0077BB",  # blue
    "#E69F00",  # orange
    "#CC3311",  # vermilion
    "#000000",  # black
    "#99DDFF",  # light blue
    "#4EB265",  # green
    "#332288",  # indigo
    "#EEDD88",  # sand
    "#AE76A3",  # mauve
    "#555555",  # dark grey
    "#72190E",  # brown
    "#BBBBBB",  # light grey
)
DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot")
SYMBOLS: tuple[str, ...] = ("circle", "square", "diamond", "triangle-up", "x", "star")

#: Arc diagrams and verdicts: blue for right, orange for wrong, grey (dashed) for missed — never red/green.
RIGHT, WRONG, MISSED = "#0077BB", "#E67E00", "#9A9A9A"


def series_style(k: int) -> dict:
    """Line colour, dash and marker symbol of the ``k``-th series (0-based): distinct for any k."""
    return {
        "color": PALETTE[k % len(PALETTE)],
        "dash": DASHES[(k // len(PALETTE)) % len(DASHES)],
        "symbol": SYMBOLS[(k // len(PALETTE) + k) % len(SYMBOLS)],
    }
