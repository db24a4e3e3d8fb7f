"""The comparison page of a large pair is computed in the background on its first request (issue 28): the page
says so meanwhile, never shows half a comparison, and then shows exactly what computing it in the request
gives, without reading the scores again."""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna import pipeline, tasks
from comparna.services.pages import comparison
from comparna.services.rankings import rank_subset
from predictors.models import Method
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

SCORES_TABLE = re.compile(r'(FROM|JOIN) "comparna_score"')


def _same(value) -> str:
    return json.dumps(value, sort_keys=True, default=repr)  # NaN equals NaN here


def test_a_large_pair_is_computed_in_the_background_then_shown(client, world, monkeypatch):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    alpha, beta = Method.objects.get(name="Alpha"), Method.objects.get(name="Beta")
    url = reverse("method-comparison", args=[snapshot.dataset.slug, "all", "extended", alpha.pk, beta.pk])
    cache.clear()
    expected = comparison.compare_methods(snapshot=snapshot, a=alpha, b=beta)  # in the request, as before
    cache.clear()
    queued = []
    monkeypatch.setattr(comparison, "REQUEST_LIMIT", 5)  # 16 common targets: "large" here
    monkeypatch.setattr(pipeline, "comparison_requested", lambda **kw: queued.append(tuple(kw.values())))
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert 'id="comparison-pending"' in page and "Being computed" in page
    assert "16 common targets" in page and 'id="n-common"' not in page  # no number of the comparison yet
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]
    client.get(url)
    assert queued == [(snapshot.pk, alpha.pk, beta.pk)]  # queued once
    assert tasks.compare_methods_task(*queued[0]) == expected.n_common == 16
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    page = response.content.decode()
    assert "Being computed" not in page and "no-store" not in response.get("Cache-Control", "")
    assert f'<strong id="n-common">{expected.n_common}</strong>' in page
    shown = response.context["comp"]
    for part in ("test", "paired", "by_family", "by_length", "equivalence", "verdict"):
        assert _same(getattr(shown, part)) == _same(getattr(expected, part)), part
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]


def test_a_small_pair_is_computed_in_the_request(client, world, monkeypatch):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    alpha, beta = Method.objects.get(name="Alpha"), Method.objects.get(name="Beta")
    monkeypatch.setattr(pipeline, "comparison_requested", lambda **kw: pytest.fail("queued"))
    cache.clear()
    url = reverse("method-comparison", args=[snapshot.dataset.slug, "all", "extended", alpha.pk, beta.pk])
    page = client.get(url).content.decode()
    assert "Being computed" not in page and '<strong id="n-common">16</strong>' in page
