"""A subset without a ranking snapshot: its pooled scores on the dataset rankings page are computed in the
background (issue 28), the page says so before, and shows exactly the pooled numbers after."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna.services import tallies
from comparna.services.pages.common import bump_data_version
from comparna.services.pages.rankings import store_ranking_rows
from comparna.services.rankings import rank_subset
from comparna.services.summaries import refresh_unranked_summaries, summarize_subset
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

SCORES_TABLE = re.compile(r'(FROM|JOIN) "comparna_score"')


def test_unranked_subset_pooled_scores_are_background_work(client, world):  # noqa: F811
    rank_subset(subset=world["all"], definition="extended")  # "few" stays without a snapshot
    tallies.refresh_tallies()
    store_ranking_rows()  # the ranked subset's rows: background work too (test_tallies.py)
    cache.clear()
    url = reverse("dataset-rankings", args=[world["all"].dataset.slug])
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    assert 'data-state="pooled-pending"' in page and "being computed" in page
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]
    assert refresh_unranked_summaries() == 1
    bump_data_version()  # as the task does
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    assert 'data-state="pooled-pending"' not in page
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]
    expected = summarize_subset(subset=world["few"], definition="extended")
    assert expected.methods
    for m in expected.methods:
        assert f"<tr><td>{m.method}</td><td class=\"num\">{m.mcc:.3f}</td>" in page
