"""A subset without a ranking snapshot: its pooled scores on the dataset rankings page are computed in the
background (issue 28), the page says so before, and shows exactly the pooled numbers after."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna.models import Subset
from comparna.services import tallies
from comparna.services.pages.common import bump_data_version
from comparna.services.pages.rankings import store_ranking_rows
from comparna.services.rankings import rank_subset
from comparna.services.summaries import refresh_unranked_summaries, summarize_subset
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

SCORES_TABLE = re.compile(r'(FROM|JOIN) "comparna_score"')


def test_unranked_subset_pooled_scores_are_background_work(client, world):  # noqa: F811
    # Since bd17209 (issue 37 item 9) "few" (6 targets of a static set, under the 10 a verdict needs) is
    # marked too few to rank, its table replaced by why; a rankable subset without a snapshot keeps this
    # behaviour.
    most = Subset.objects.create(dataset=world["all"].dataset, slug="most", name="Twelve targets", order=2)
    most.targets.add(*world["targets"][:12])
    rank_subset(subset=world["all"], definition="extended")  # "few" and "most" stay without a snapshot
    tallies.refresh_tallies()
    store_ranking_rows()  # the ranked subset's rows: background work too (test_tallies.py)
    cache.clear()
    url = reverse("dataset-rankings", args=[world["all"].dataset.slug])
    section = re.compile(r'<section class="subset" id="(most|few)-extended">(.*?)</section>', re.S)
    with CaptureQueriesContext(connection) as queries:
        page = dict(section.findall(client.get(url).content.decode()))
    assert 'data-state="pooled-pending"' in page["most"] and "being computed" in page["most"]
    assert 'data-state="unrankable"' in page["few"] and "pooled" not in page["few"]
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]
    assert refresh_unranked_summaries() == 2
    bump_data_version()  # as the task does
    with CaptureQueriesContext(connection) as queries:
        page = dict(section.findall(client.get(url).content.decode()))
    assert 'data-state="pooled-pending"' not in page["most"]
    assert 'data-state="unrankable"' in page["few"] and "pooled" not in page["few"]
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]
    expected = summarize_subset(subset=most, definition="extended")
    assert expected.methods
    for m in expected.methods:
        assert f"<tr><td>{m.method}</td><td class=\"num\">{m.mcc:.3f}</td>" in page["most"]


def test_dataset_page_shows_each_subsets_first_rows_and_links_the_rest(client, world, monkeypatch):  # noqa: F811
    """An overview: each subset's table holds its first OVERVIEW_ROWS methods by rank, and says how many
    there are with the link to the full table (at 100 methods × 20 subsets all rows took a second)."""
    from comparna.views import rankings as views

    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    tallies.refresh_tallies()
    store_ranking_rows()
    ranked = [m["method"] for m in snapshot.report["methods"] if m.get("wins", 0) + m.get("losses", 0)
              + m.get("draws", 0) > 0]
    assert len(ranked) >= 2
    url = reverse("dataset-rankings", args=[world["all"].dataset.slug])
    section = re.compile(r'<section class="subset" id="all-extended">(.*?)</section>', re.S)

    def shown() -> tuple[list[str], str]:
        cache.clear()
        html = section.search(client.get(url).content.decode()).group(1)
        return re.findall(r'<tr data-method="([^"]+)">', html), html

    everything, html = shown()
    assert "more-methods" not in html and everything == ranked
    monkeypatch.setattr(views, "OVERVIEW_ROWS", 1)
    first, html = shown()
    assert first == everything[:1]
    assert f"The first 1 of {len(everything)} methods" in html
    assert reverse("subset-rankings", args=[world["all"].dataset.slug, "all", "extended"]) in html
