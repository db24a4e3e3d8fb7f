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
