"""The comparison page shows a bounded per-target table (the targets where the two methods differ most; all of
them in the CSV and the zip), and the downloads never compute a large pair in the request (issue 28)."""

from __future__ import annotations

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


def _pair(world):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    alpha, beta = Method.objects.get(name="Alpha"), Method.objects.get(name="Beta")
    args = [snapshot.dataset.slug, "all", "extended", alpha.pk, beta.pk]
    return snapshot, alpha, beta, args


def _tbody(page: str) -> str:
    table = page.split('<table class="data compact sortable" id="per-target">')[1]
    return table.split("<tbody>")[1].split("</tbody>")[0]


def test_the_per_target_table_is_bounded(client, world, monkeypatch):  # noqa: F811
    snapshot, alpha, beta, args = _pair(world)
    cache.clear()
    url = reverse("method-comparison", args=args)
    page = client.get(url).content.decode()
    assert 'id="per-target-note"' not in page and _tbody(page).count("<tr>") == 16  # all, as before
    comp = comparison.compare_methods(snapshot=snapshot, a=alpha, b=beta)
    monkeypatch.setattr(comparison, "PER_TARGET_ROWS", 5)
    cache.clear()
    page = client.get(url).content.decode()
    assert 'id="per-target-note"' in page and "The 5 targets (of 16)" in page
    shown = re.findall(r'<td><a href="[^"]+">([^<]+)</a>', _tbody(page))
    gaps = sorted((abs(r["a"].mcc - r["b"].mcc) for r in comp.rows), reverse=True)
    by_id = {r["source_id"]: abs(r["a"].mcc - r["b"].mcc) for r in comp.rows}
    assert len(shown) == 5 and [by_id[s] for s in shown] == gaps[:5]
    assert "Per-target scores (16)" in page


def test_downloads_of_a_large_pair_wait_for_the_background(client, world, monkeypatch):  # noqa: F811
    snapshot, alpha, beta, args = _pair(world)
    cache.clear()
    expected = comparison.comparison_csv(comparison.compare_methods(snapshot=snapshot, a=alpha, b=beta))
    cache.clear()
    queued = []
    monkeypatch.setattr(comparison, "REQUEST_LIMIT", 5)  # 16 common targets: "large" here
    monkeypatch.setattr(pipeline, "comparison_requested", lambda **kw: queued.append(tuple(kw.values())))
    for name in ("method-comparison-csv", "method-comparison-zip"):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse(name, args=args))
        assert response.status_code == 503 and response["Retry-After"]
        assert response["Cache-Control"] == "no-store"
        assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]
    assert queued == [(snapshot.pk, alpha.pk, beta.pk)]
    tasks.compare_methods_task(*queued[0])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("method-comparison-csv", args=args))
    assert response.status_code == 200 and response.content.decode() == expected
    assert not [q for q in queries if SCORES_TABLE.search(q["sql"])]  # the computed comparison's rows
    response = client.get(reverse("method-comparison-zip", args=args))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"


def test_a_computed_comparison_loads_its_rows_by_their_constructor(world, monkeypatch):  # noqa: F811
    import pickle

    from comparna.rna.metric_registry import ScoreAttributes

    snapshot, alpha, beta, _ = _pair(world)
    comp = comparison.compare_methods(snapshot=snapshot, a=alpha, b=beta)
    data = pickle.dumps(comp, pickle.HIGHEST_PROTOCOL)
    looked_up = []
    original = ScoreAttributes.__getattr__
    monkeypatch.setattr(ScoreAttributes, "__getattr__",
                        lambda self, name: looked_up.append(name) or original(self, name))
    loaded = pickle.loads(data)
    assert not looked_up  # no AttributeError per row (most of a large comparison's load time)
    assert loaded.rows == comp.rows and loaded.rows[0]["a"].mcc == comp.rows[0]["a"].mcc
