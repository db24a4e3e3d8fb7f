"""The method page's figures are computed in the background, never from its scores in a request (issue 28).

:func:`comparna.services.pages.methods.refresh_method_summaries` stores each method's performance by dataset,
length and family and its precision-recall curve; the page shows exactly those numbers, says when they were
computed, says "being computed" before the first computation, and a change of the method's scores is picked
up by the next refresh.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna.models import Score
from comparna.services import tallies
from comparna.services.pages.methods import method_performance, refresh_method_summaries
from comparna.tallies.models import MethodSummary
from predictors.models import Method
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

SCORES_TABLE = re.compile(r'(FROM|JOIN) "comparna_score"')


def _overall(page: str) -> list[str]:
    return re.findall(r"— overall (-?[0-9.]+) \[(-?[0-9.]+), (-?[0-9.]+)\], n = (\d+)", page)


def test_method_page_says_being_computed_then_shows_the_live_numbers(client, world):  # noqa: F811
    beta = Method.objects.get(name="Beta")
    url = reverse("method-detail", args=[beta.pk])
    page = client.get(url).content.decode()
    assert 'id="summary-pending"' in page and "Being computed" in page
    assert not _overall(page)  # no number before the computation
    assert refresh_method_summaries() == Method.objects.public().count()
    page = client.get(url).content.decode()
    assert "Being computed" not in page and 'id="summary-at"' in page
    live = method_performance(beta)
    assert live
    expected = [(f"{p['overall']['mean']:.3f}", f"{p['overall']['low']:.3f}", f"{p['overall']['high']:.3f}",
                 str(p["overall"]["n"])) for p in live]
    assert _overall(page) == expected
    stored = MethodSummary.objects.get(method=beta).data["performance"]
    assert [p["overall"] for p in stored] == [p["overall"] for p in live]
    assert [p["by_length"] for p in stored] == [p["by_length"] for p in live]
    assert [p["by_family"] for p in stored] == [p["by_family"] for p in live]


def test_a_refresh_follows_the_scores(client, world):  # noqa: F811
    beta = Method.objects.get(name="Beta")
    assert refresh_method_summaries() > 0
    assert refresh_method_summaries() == 0  # nothing changed: nothing recomputed
    before = MethodSummary.objects.get(method=beta)
    # a re-scoring updates rows in place: the next refresh sees it
    Score.objects.filter(prediction__method_version__method=beta).update(mcc=0.5)
    assert refresh_method_summaries() == 1
    after = MethodSummary.objects.get(method=beta)
    assert after.stamp != before.stamp and after.computed_at >= before.computed_at
    assert after.data["performance"][0]["overall"]["mean"] == pytest.approx(0.5)
    page = client.get(reverse("method-detail", args=[beta.pk])).content.decode()
    assert _overall(page)[0][0] == "0.500"


def test_method_page_reads_no_score_rows(client, world):  # noqa: F811
    tallies.refresh_tallies()
    refresh_method_summaries()
    for name in ("Alpha", "Beta", "Gamma", "Delta"):
        method = Method.objects.get(name=name)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse("method-detail", args=[method.pk]))
        assert response.status_code == 200
        assert not [q["sql"] for q in queries if SCORES_TABLE.search(q["sql"])], name


def test_a_run_with_a_time_budget_goes_on_where_the_last_one_stopped(world):  # noqa: F811
    public = Method.objects.public().count()
    assert refresh_method_summaries(budget_s=0) == 1  # at least one method per run
    assert refresh_method_summaries(budget_s=0) == 1  # the next one: never computed first
    assert refresh_method_summaries() == public - 2
    assert MethodSummary.objects.count() == public
