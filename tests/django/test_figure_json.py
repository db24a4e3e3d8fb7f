"""The rank history figure is written as plain JSON (validating 100 traces with Plotly's classes took most of
a ranking page's time, issue 28): it is the figure Plotly's classes build."""

from __future__ import annotations

import datetime as dt
import json

import plotly.graph_objects as go

from comparna.services.pages.figures import rank_history_figure
from comparna.services.pages.palette import PALETTE, series_style


def _plotly_built(history, names, title=""):
    fig = go.Figure()
    for k, name in enumerate(names):
        xs = [h["at"].isoformat() for h in history if name in h["ranks"]]
        ys = [h["ranks"][name] for h in history if name in h["ranks"]]
        if xs:
            style = series_style(k)
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines+markers", name=name,
                line={"shape": "hv", "color": style["color"], "dash": style["dash"]},
                marker={"symbol": style["symbol"], "color": style["color"]},
            ))
    fig.update_layout(
        title=title or None, colorway=list(PALETTE), height=360,
        margin={"l": 50, "r": 20, "t": 40 if title else 20, "b": 40},
        yaxis={"title": "rank", "autorange": "reversed", "dtick": 1}, xaxis={"title": "snapshot date"},
        template="plotly_white", legend={"font": {"size": 11}},
    )
    return json.loads(fig.to_json())


def test_rank_history_figure_is_plotlys():
    day = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    history = [
        {"pk": k, "at": day + dt.timedelta(days=k), "ranks": {"Alpha": 1 + k % 2, "Beta <b>": 2 - k % 2}}
        for k in range(3)
    ] + [{"pk": 9, "at": day + dt.timedelta(days=9), "ranks": {"Gamma": 1}}]
    names = ["Alpha", "Beta <b>", "Gamma", "Delta"]
    for title in ("", "All RNAs"):
        ours = json.loads(rank_history_figure(history, methods=names, title=title))
        assert ours == _plotly_built(history, names, title)
    assert rank_history_figure([]) is None


def _plotly_method_rank(lines):
    """The method page's rank figure as Plotly's classes built it (before issue 28)."""
    import html

    fig = go.Figure()
    n = len(lines)
    for k, (label, pts) in enumerate(sorted(lines.items())):
        style = series_style(k)
        offset = round((k - (n - 1) / 2) * min(0.08, 0.5 / max(n, 1)), 3)
        fig.add_trace(go.Scatter(
            x=[p[0] for p in pts], y=[p[1] + offset for p in pts], customdata=[p[1] for p in pts],
            hovertemplate="rank %{customdata}<br>%{x}<extra>" + html.escape(label) + "</extra>",
            mode="lines+markers", name=label,
            line={"shape": "hv", "color": style["color"], "dash": style["dash"], "width": 2},
            marker={"symbol": style["symbol"], "color": style["color"], "size": 7},
        ))
    worst = max((p[1] for pts in lines.values() for p in pts), default=1)
    fig.update_layout(
        height=340, template="plotly_white", colorway=list(PALETTE),
        margin={"l": 50, "r": 20, "t": 20, "b": 40},
        yaxis={"title": "rank", "range": [worst + 0.5, 0.5], "dtick": 1, "tick0": 1},
        xaxis={"title": "snapshot date"}, legend={"font": {"size": 11}},
    )
    return json.loads(fig.to_json())


def test_method_rank_figure_is_plotlys():
    from comparna.services.pages.figures import method_rank_figure

    day = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    lines = {
        f"PDB · All <{k}> (extended)": [((day + dt.timedelta(days=d)).isoformat(), 1 + (d + k) % 4)
                                        for d in range(5)]
        for k in range(4)
    }
    for some in (lines, {"one": lines["PDB · All <0> (extended)"]}):
        text = method_rank_figure(some)
        assert "<" not in text
        assert json.loads(text) == _plotly_method_rank(some)
