"""The PPV–sensitivity overview (issue 37, item 8): on the subset ranking page, one point per ranked method at
its mean per-target sensitivity and PPV on the snapshot's common targets, with both 95 % intervals and n —
checked against the Score rows; on the comparison page the same points with the two methods highlighted.
The figure is drawn from the rows stored in the background (no score is read for it on a request)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from django.urls import reverse

from comparna.models import RankingSnapshot, Score
from comparna.services.ranking_scope import common_targets
from predictors.models import Method
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db

ARGS = ["rnastrand", "all", "extended"]


def figure(page: str, chart: str) -> dict:
    found = re.search(rf'<script type="application/json" id="{chart}-json">(.*?)</script>', page, re.S)
    assert found, f"no {chart} chart"
    return json.loads(html.unescape(found.group(1)))


def newest() -> RankingSnapshot:
    return (
        RankingSnapshot.objects.filter(dataset__slug="rnastrand", subset__slug="all", definition="extended")
        .order_by("-computed_at", "-pk")
        .first()
    )


def test_the_overview_has_a_point_per_ranked_method_from_its_scores(client, site):
    snap = newest()
    ranked = [r["method"] for r in snap.report["methods"] if r.get("ranked", True)]
    common = common_targets(snap.report)
    assert common and ranked
    from django.core.cache import cache

    from comparna.services.pages.rankings import store_ranking_rows

    store_ranking_rows()  # the background's work: the page's rows, with the overview's points
    cache.clear()
    page = client.get(reverse("subset-rankings", args=ARGS) + f"?snapshot={snap.pk}").content.decode()
    assert 'id="overview"' in page and "PPV against sensitivity" in page
    fig = figure(page, "overview")
    assert [t["name"] for t in fig["data"]] == ranked  # rank order, every ranked method once
    for trace in fig["data"]:
        scores = Score.objects.filter(
            prediction__method_version__method__name=trace["name"],
            prediction__method_version__is_current=True,
            prediction__target__source_id__in=common,
            definition="extended",
        )
        sens = np.array([s.sensitivity for s in scores])
        ppv = np.array([s.ppv for s in scores])
        assert len(sens) == len(common)
        x, y = trace["x"][0], trace["y"][0]
        assert x == pytest.approx(sens.mean(), abs=1e-4) and y == pytest.approx(ppv.mean(), abs=1e-4)
        low_x, high_x, low_y, high_y, n = trace["customdata"][0]
        assert n == len(common)
        # the interval is around the mean, as the error bars draw it
        assert low_x <= x + 1e-3 and x - 1e-3 <= high_x and low_y <= y + 1e-3 and y - 1e-3 <= high_y
        assert trace["error_x"]["array"][0] == pytest.approx(high_x - x, abs=2e-3)
        assert trace["error_y"]["arrayminus"][0] == pytest.approx(y - low_y, abs=2e-3)
        assert "n = %{customdata[4]} targets" in trace["hovertemplate"]
    # methods differ: the points are not all in one place
    assert len({round(t["x"][0], 3) for t in fig["data"]}) > 1
    # the page draws the stored points: a changed stored point is what it shows (nothing recomputed)
    from comparna.tallies.models import RankingRows

    stored = RankingRows.objects.get(snapshot=snap, protocol="target")
    stored.rows[0]["overview"]["sensitivity"]["mean"] = 0.123456
    stored.save(update_fields=["rows"])
    cache.clear()
    page = client.get(reverse("subset-rankings", args=ARGS) + f"?snapshot={snap.pk}").content.decode()
    drawn = {t["name"]: t["x"][0] for t in figure(page, "overview")["data"]}
    assert drawn[stored.rows[0]["method"]] == 0.1235
    cache.clear()
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("mean sensitivity")
    assert fig["layout"]["yaxis"]["title"]["text"].startswith("mean PPV")


def test_the_comparison_highlights_its_two_methods(client, site):
    from django.core.cache import cache

    from comparna.services.pages.rankings import store_ranking_rows
    from comparna.tallies.models import RankingRows

    cache.clear()  # (pages cached by the test before, whose database changes were rolled back)
    snap = newest()
    good, mid = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    url = reverse("method-comparison", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={snap.pk}"
    RankingRows.objects.filter(snapshot=snap).delete()  # before the background stored them
    assert 'id="overview"' not in client.get(url).content.decode()  # the request never computes the rows
    store_ranking_rows()  # the background's work: the page's rows, with the overview's points
    cache.clear()
    page = client.get(url).content.decode()
    fig = figure(page, "overview")
    ranking = figure(
        client.get(reverse("subset-rankings", args=ARGS) + f"?snapshot={snap.pk}").content.decode(),
        "overview",
    )
    assert [(t["name"], t["x"], t["y"]) for t in fig["data"]] == [
        (t["name"], t["x"], t["y"]) for t in ranking["data"]
    ]
    colours = {t["name"]: t["marker"]["color"] for t in fig["data"]}
    assert colours["GoodFold"] != "#BBBBBB" and colours["MidFold"] != "#BBBBBB"
    assert {c for n, c in colours.items() if n not in ("GoodFold", "MidFold")} == {"#BBBBBB"}
