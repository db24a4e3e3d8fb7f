"""The site's categorical palette and arc colours stay distinct for colour-blind readers.

Colour-vision deficiencies are simulated with the matrices of Machado, Oliveira & Fernandes (IEEE TVCG
15:1291, 2009; severity 1.0) on linear RGB, and distances measured as CIELAB ΔE*ab (D65).
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from comparna.services.pages.palette import MISSED, PALETTE, RIGHT, WRONG, series_style
from tests.e2e.stack import REPO

MACHADO = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
WHITE = np.array([0.95047, 1.0, 1.08883])


def linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour[k : k + 2], 16) for k in (1, 3, 5)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(lin: np.ndarray) -> np.ndarray:
    t = SRGB_TO_XYZ @ np.clip(lin, 0, 1) / WHITE
    f = np.where(t > 216 / 24389, np.cbrt(t), (24389 / 27 * t + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(hex_colour: str, vision: str) -> np.ndarray:
    return lab(MACHADO[vision] @ linear(hex_colour))


def min_distance(colours, vision: str) -> float:
    pairs = itertools.combinations(colours, 2)
    return min(float(np.linalg.norm(seen(a, vision) - seen(b, vision))) for a, b in pairs)


def test_the_simulation_merges_red_and_green_as_expected():
    # the check can fail: the old red/green arc pair loses most of its difference without red-green vision
    red, green = "#c62828", "#2e8b3e"
    normal = min_distance([red, green], "normal")
    assert normal > 50
    for vision in ("protanopia", "deuteranopia"):
        assert min_distance([red, green], vision) < 0.25 * normal


def test_twelve_distinct_colours_for_every_vision():
    assert len(set(PALETTE)) >= 12 and all(re.fullmatch(r"#[0-9A-F]{6}", c) for c in PALETTE)
    for vision in MACHADO:
        assert min_distance(PALETTE, vision) >= 20, vision
    # none too pale to see as a line on white (CIELAB lightness)
    assert max(seen(c, "normal")[0] for c in PALETTE) < 88


def test_series_beyond_the_palette_differ_by_dash():
    styles = [series_style(k) for k in range(40)]
    assert len({(s["color"], s["dash"]) for s in styles}) == 40


@pytest.mark.parametrize("vision", list(MACHADO))
def test_arc_colours_right_wrong_missed_are_distinct(vision):
    assert min_distance([RIGHT, WRONG, MISSED], vision) >= 20


def test_stylesheet_uses_the_arc_colours_and_no_red_green_pair():
    css = (REPO / "static" / "comparna" / "site.css").read_text()
    for cls, colour in (("found", RIGHT), ("tp", RIGHT), ("fp", WRONG), ("missed", MISSED)):
        assert re.search(rf"svg\.arcs path\.{cls} {{ stroke: {colour};", css), cls
    for old in ("#2e8b3e", "#c62828", "#cdeccf", "#f6d2d2"):
        assert old not in css.lower()
