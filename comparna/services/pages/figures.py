"""Pictures of the pages: Plotly figures (as JSON for a ``<script type="application/json">`` element) and SVG
arc diagrams. Pure functions of the numbers the page modules compute; Plotly is imported only when a figure
is drawn (it is large, and most requests are served from the cache)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from comparna.services.pages.palette import MISSED, PALETTE, RIGHT, WRONG, series_style

#: Decimals kept in embedded figure data: 4 for scores in [0, 1] (0.0001 is far below a pixel).
DECIMALS = 4


def json_for_script(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element: a Plotly figure (serialised by its
    own encoder) or any JSON value. ``<``, ``>`` and ``&`` are escaped so the text cannot end the element."""
    to_json = getattr(value, "to_json", None)
    text = to_json() if callable(to_json) else json.dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def rounded(values: Iterable[float], decimals: int = DECIMALS) -> list[float]:
    """Floats rounded for embedding (17-digit floats made the pages megabytes long)."""
    return [round(float(v), decimals) for v in values]


def thinned(xs: Sequence[float], ys: Sequence[float], *, step: float = 0.002) -> tuple[list, list]:
    """A curve through [0, 1]² cut to the points that move at least ``step`` (in x or y) from the last one
    kept, plus the end point: under half a pixel of a 400-pixel plot, so the drawn line is the same."""
    if len(xs) <= 2:
        return rounded(xs), rounded(ys)
    keep_x, keep_y = [xs[0]], [ys[0]]
    for x, y in zip(xs[1:-1], ys[1:-1], strict=True):
        if abs(x - keep_x[-1]) >= step or abs(y - keep_y[-1]) >= step:
            keep_x.append(x)
            keep_y.append(y)
    keep_x.append(xs[-1])
    keep_y.append(ys[-1])
    return rounded(keep_x), rounded(keep_y)


_TEMPLATES: dict[str, dict] = {}


def template_json(name: str) -> dict:
    """A Plotly template as plain JSON, built once per process (validating it took tens of milliseconds
    per figure)."""
    if name not in _TEMPLATES:
        import plotly.io as pio

        _TEMPLATES[name] = pio.templates[name].to_plotly_json()
    return _TEMPLATES[name]


def rank_history_figure(
    history: list[dict], *, methods: Iterable[str] | None = None, title: str = ""
) -> str | None:
    """Plotly JSON of rank over time, one line per method (rank 1 on top); None without snapshots.

    Written as plain JSON (the figure Plotly's classes build, without validating each of up to 100 traces:
    that took most of a ranking page's time at 100 methods)."""
    if not history:
        return None
    names = list(methods) if methods is not None else sorted({m for h in history for m in h["ranks"]})
    traces = []
    for k, name in enumerate(names):
        xs = [h["at"].isoformat() for h in history if name in h["ranks"]]
        ys = [h["ranks"][name] for h in history if name in h["ranks"]]
        if xs:
            style = series_style(k)
            traces.append({
                "line": {"color": style["color"], "dash": style["dash"], "shape": "hv"},
                "marker": {"color": style["color"], "symbol": style["symbol"]},
                "mode": "lines+markers",
                "name": name,
                "x": xs,
                "y": ys,
                "type": "scatter",
            })
    layout = {
        "colorway": list(PALETTE),
        "height": 360,
        "margin": {"l": 50, "r": 20, "t": 40 if title else 20, "b": 40},
        "yaxis": {"title": {"text": "rank"}, "autorange": "reversed", "dtick": 1},
        "xaxis": {"title": {"text": "snapshot date"}},
        "template": template_json("plotly_white"),
        "legend": {"font": {"size": 11}},
    }
    layout["title"] = {"text": title} if title else {}
    return json_for_script({"data": traces, "layout": layout})


def overview_figure(rows: Sequence[dict], *, highlight: Sequence[str] = ()) -> str | None:
    """Plotly JSON of the PPV–sensitivity overview (CompaRNA 2013's summary plot): a point per method at
    its mean per-target sensitivity and PPV on the common targets, with both 95 % intervals as error bars
    and n in the hover; ``rows`` carry ``"overview"`` (:func:`comparna.rna.overview.overview_point`) in
    rank order. With ``highlight`` (a comparison's two methods) the others are drawn faint. None when no
    row has a point (rows stored before the overview existed). Plain JSON, like the rank history."""
    traces = []
    for k, row in enumerate(r for r in rows if r.get("overview")):
        point, style = row["overview"], series_style(k)
        sens, ppv = point["sensitivity"], point["ppv"]
        faint = bool(highlight) and row["method"] not in highlight
        highlight_size = 12 if highlight and not faint else 9
        colour = "#BBBBBB" if faint else style["color"]
        traces.append({
            "type": "scatter",
            "mode": "markers",
            "name": row["method"],
            "x": rounded([sens["mean"]]),
            "y": rounded([ppv["mean"]]),
            "error_x": {"type": "data", "symmetric": False, "color": colour, "thickness": 1,
                        "array": rounded([sens["high"] - sens["mean"]]),
                        "arrayminus": rounded([sens["mean"] - sens["low"]])},
            "error_y": {"type": "data", "symmetric": False, "color": colour, "thickness": 1,
                        "array": rounded([ppv["high"] - ppv["mean"]]),
                        "arrayminus": rounded([ppv["mean"] - ppv["low"]])},
            "marker": {"color": colour, "symbol": style["symbol"], "size": highlight_size},
            "customdata": [[round(sens["low"], 3), round(sens["high"], 3), round(ppv["low"], 3),
                            round(ppv["high"], 3), point["n"]]],
            "hovertemplate": "sensitivity %{x:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}]<br>"
            "PPV %{y:.3f} [%{customdata[2]:.3f}, %{customdata[3]:.3f}]<br>n = %{customdata[4]} targets"
            "<extra>" + html.escape(row["method"]) + "</extra>",
        })
    if not traces:
        return None
    layout = {
        "height": 460,
        "margin": {"l": 55, "r": 20, "t": 20, "b": 50},
        "xaxis": {"title": {"text": "mean sensitivity (95 % CI)"}, "range": [-0.02, 1.02]},
        "yaxis": {"title": {"text": "mean PPV (95 % CI)"}, "range": [-0.02, 1.02]},
        "template": template_json("plotly_white"),
        "legend": {"font": {"size": 11}},
        "hovermode": "closest",
    }
    return json_for_script({"data": traces, "layout": layout})


def method_rank_figure(lines: dict[str, list[tuple[str, int]]]) -> str:
    """Plotly JSON: a method's rank over time, one line per ``label -> [(ISO date, rank), ...]``.

    Written as plain JSON (the figure Plotly's classes build: setting up their validators took a third of a
    second on a process's first method page)."""
    traces = []
    n = len(lines)
    for k, (label, pts) in enumerate(sorted(lines.items())):
        style = series_style(k)
        # Lines of equal rank would hide each other: each is drawn a little apart (under a quarter rank);
        # the hover text gives the true rank.
        offset = round((k - (n - 1) / 2) * min(0.08, 0.5 / max(n, 1)), 3)
        traces.append({
            "customdata": [p[1] for p in pts],
            "hovertemplate": "rank %{customdata}<br>%{x}<extra>" + html.escape(label) + "</extra>",
            "line": {"color": style["color"], "dash": style["dash"], "shape": "hv", "width": 2},
            "marker": {"color": style["color"], "size": 7, "symbol": style["symbol"]},
            "mode": "lines+markers",
            "name": label,
            "x": [p[0] for p in pts],
            "y": [p[1] + offset for p in pts],
            "type": "scatter",
        })
    worst = max((p[1] for pts in lines.values() for p in pts), default=1)
    layout = {
        "height": 340,
        "template": template_json("plotly_white"),
        "colorway": list(PALETTE),
        "margin": {"l": 50, "r": 20, "t": 20, "b": 40},
        "yaxis": {"title": {"text": "rank"}, "range": [worst + 0.5, 0.5], "dtick": 1, "tick0": 1},
        "xaxis": {"title": {"text": "snapshot date"}},
        "legend": {"font": {"size": 11}},
    }
    return json_for_script({"data": traces, "layout": layout})


@dataclass(frozen=True)
class PrLine:
    """One pooled precision-recall curve and the binary prediction's point, as drawn."""

    label: str
    recall: list[float]
    precision: list[float]
    auc: float
    point: tuple[float, float]


def pr_curve_figure(lines: Sequence[PrLine]) -> str:
    """Plotly JSON: each curve (interpolated, SCIENCE.md §7) with its binary prediction's point."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, line in enumerate(lines):
        style = series_style(k)
        xs, ys = thinned(line.recall, line.precision)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=f"{line.label}: AUC-PR {line.auc:.3f}",
                line={"color": style["color"], "dash": style["dash"]},
            )
        )
        recall, precision = line.point
        fig.add_trace(
            go.Scatter(
                x=rounded([recall]),
                y=rounded([precision]),
                mode="markers",
                marker={"size": 11, "symbol": "x", "color": style["color"]},
                name=f"{line.label}: binary prediction",
            )
        )
    fig.update_layout(
        height=400,
        template="plotly_white",
        colorway=list(PALETTE),
        margin={"l": 50, "r": 20, "t": 20, "b": 45},
        xaxis={"title": "recall (sensitivity)", "range": [0, 1.02]},
        yaxis={"title": "precision", "range": [0, 1.02]},
    )
    return json_for_script(fig)


def comparison_scatter_figure(rows: Sequence[dict], names: tuple[str, str]) -> str | None:
    """Plotly JSON: sensitivity against PPV of two methods (``names``, scores under keys ``"a"`` and ``"b"``
    of each row) on every common target (``row["source_id"]``)."""
    import plotly.graph_objects as go

    if not rows:
        return None
    from django.urls import reverse

    fig = go.Figure()
    # Each dot links to its target's page: site.js fills the layout's ``meta.point_link`` with the dot's
    # ``customdata`` (the target's id) on click. Ids and 3-decimal scores keep 1700 targets' dots small.
    ids = [r.get("target_id") for r in rows]
    link = reverse("target-detail", args=[0]).replace("/0/", "/{id}/")
    styles = ((names[0], "a", "circle", PALETTE[0]), (names[1], "b", "diamond", PALETTE[1]))
    for name, key, symbol, colour in styles:
        fig.add_trace(
            go.Scatter(
                x=rounded((r[key].sensitivity for r in rows), 3),
                y=rounded((r[key].ppv for r in rows), 3),
                mode="markers",
                name=name,
                text=[r["source_id"] for r in rows],
                customdata=ids,
                marker={"symbol": symbol, "opacity": 0.7, "color": colour},
                hovertemplate="%{text} (click: its page)<br>sensitivity %{x:.3f}<br>PPV %{y:.3f}<extra>"
                + html.escape(name)
                + "</extra>",
            )
        )
    fig.update_layout(
        meta={"point_link": link},
        height=420,
        template="plotly_white",
        margin={"l": 50, "r": 20, "t": 20, "b": 45},
        xaxis={"title": "sensitivity", "range": [-0.03, 1.03]},
        yaxis={"title": "PPV", "range": [-0.03, 1.03]},
    )
    return json_for_script(fig)


def group_mcc_figure(groups: Sequence[dict], names: tuple[str, str], *, axis: str) -> str | None:
    """Plotly JSON: each method's mean per-target MCC with its 95 % CI (error bars) in each group (``{"group",
    "n", "a": {"mean", "low", "high"}, "b": ...}``, e.g. RNA families or length bins), side by side; a group
    label carries its number of targets, so a small group's wide interval reads as such."""
    import plotly.graph_objects as go

    shown = [g for g in groups if g.get("a") and g.get("b")]
    if not shown:
        return None
    labels = [f"{g['group'] or 'unknown'} (n = {g['n']})" for g in shown]
    fig = go.Figure()
    styles = ((names[0], "a", "circle", PALETTE[0]), (names[1], "b", "diamond", PALETTE[1]))
    for name, key, symbol, colour in styles:
        means = rounded((g[key]["mean"] for g in shown), 3)
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=means,
                mode="markers",
                name=name,
                marker={"symbol": symbol, "size": 10, "color": colour},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": rounded((g[key]["high"] - g[key]["mean"] for g in shown), 3),
                    "arrayminus": rounded((g[key]["mean"] - g[key]["low"] for g in shown), 3),
                    "color": colour,
                },
                hovertemplate="%{x}<br>mean MCC %{y:.3f}<extra>" + html.escape(name) + "</extra>",
            )
        )
    fig.update_layout(
        height=380,
        template="plotly_white",
        scattermode="group",
        margin={"l": 50, "r": 20, "t": 20, "b": 90},
        xaxis={"title": axis, "automargin": True},
        yaxis={"title": "mean MCC (95 % CI)", "range": [-0.03, 1.03]},
        legend={"orientation": "h", "y": 1.08},
    )
    return json_for_script(fig)


@dataclass(frozen=True)
class Arc:
    """One arc of an arc diagram: 1-based i < j, a CSS class and a tooltip."""

    i: int
    j: int
    css: str
    title: str = ""


def arc_diagram_svg(
    length: int,
    upper: Sequence[Arc],
    lower: Sequence[Arc] = (),
    *,
    sequence: str | None = None,
    width: int = 900,
    label: str = "",
) -> str:
    """An SVG arc diagram: the backbone as a line, each base pair as an arc above (``upper``) or below it.

    A pure function of its arguments (no JavaScript needed to see it); every text is escaped. Arcs are
    half-ellipses whose height grows with the pair's span, flattened so that the widest arc fits.
    """
    margin = 20
    span_px = width - 2 * margin
    step = span_px / max(length, 1)
    max_span = max([a.j - a.i for a in (*upper, *lower)] or [1])
    max_height = 130.0
    k = min(1.0, max_height / (max_span * step / 2 or 1))
    up_h = max([(a.j - a.i) * step / 2 * k for a in upper] or [0]) + 10
    low_h = max([(a.j - a.i) * step / 2 * k for a in lower] or [0]) + 10 if lower else 0
    show_letters = sequence is not None and step >= 7
    axis_h = 34 if show_letters else 22
    height = int(up_h + axis_h + low_h + 4)
    y0 = up_h + 2

    def x(pos: float) -> float:
        return margin + (pos - 0.5) * step

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="arcs" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="{html.escape(label or "arc diagram")}">',
        f'<line class="backbone" x1="{x(1):.1f}" y1="{y0:.1f}" x2="{x(length):.1f}" y2="{y0:.1f}"/>',
    ]
    for arcs, sweep, y in ((upper, 1, y0), (lower, 0, y0 + (axis_h if lower else 0))):
        for a in sorted(arcs, key=lambda a: a.j - a.i, reverse=True):
            x1, x2 = x(a.i), x(a.j)
            rx = (x2 - x1) / 2
            ry = max(rx * k, 1.0)
            title = f"<title>{html.escape(a.title)}</title>" if a.title else ""
            parts.append(
                f'<path class="{html.escape(a.css)}" d="M{x1:.1f},{y:.1f} A{rx:.1f},{ry:.1f} 0 0,{sweep} '
                f'{x2:.1f},{y:.1f}">{title}</path>'
            )
    if lower:
        parts.append(
            f'<line class="backbone" x1="{x(1):.1f}" y1="{y0 + axis_h:.1f}" x2="{x(length):.1f}" '
            f'y2="{y0 + axis_h:.1f}"/>'
        )
    tick = next(t for t in (10, 20, 50, 100, 200, 500, 1000, 10**9) if span_px / (length / t) >= 35)
    for pos in [1, *range(tick, length + 1, tick)]:
        parts.append(f'<text class="tick" x="{x(pos):.1f}" y="{y0 + axis_h - 4:.1f}">{pos}</text>')
    if show_letters:
        for pos, base in enumerate(sequence, start=1):
            parts.append(f'<text class="base" x="{x(pos):.1f}" y="{y0 + 12:.1f}">{html.escape(base)}</text>')
    parts.append("</svg>")
    return "".join(parts)


#: The arc diagram's style (as in static/comparna/site.css) for an SVG shown by itself or as an <img>.
ARC_STYLE = (
    "path{fill:none;stroke-width:1.4}.backbone{stroke:#556;stroke-width:1.5}"
    "text.tick{font:9px sans-serif;fill:#667;text-anchor:middle}"
    "text.base{font:8px monospace;fill:#223;text-anchor:middle}"
    f".found,.tp{{stroke:{RIGHT}}}.missed{{stroke:{MISSED};stroke-dasharray:3 2}}"
    f".fp{{stroke:{WRONG};stroke-width:1.8}}.standard{{stroke:#1b5e9c}}"
    ".extended{stroke:#d17a00;stroke-dasharray:3 2}path:hover{stroke-width:3}"
)


def standalone_svg(svg: str) -> str:
    """An SVG of :func:`arc_diagram_svg` as a document of its own: XML declaration, its style inside."""
    head, _, rest = svg.partition(">")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{head}><style>{ARC_STYLE}</style>{rest}'
