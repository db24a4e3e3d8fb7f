"""A subset ranking page's rank history costs the same at 200 snapshots as at 10 (issue 28): it reads the
newest snapshots' stored standings, never their reports, and draws the ranks the reports hold."""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna.models import RankingSnapshot, Subset
from comparna.services.pages.methods import store_method_standings
from comparna.services.pages.rank_history import HISTORY_SNAPSHOTS, snapshot_history, subset_history
from comparna.services.ranking_scope import is_ranked
from comparna.tallies.models import MethodStanding
from tests.factories import make_dataset

pytestmark = pytest.mark.django_db

METHODS = ("Alpha", "Beta", "Gamma", "Delta")
#: The report column in a query's SQL (whole or a part of it)
REPORT = f'"{RankingSnapshot._meta.db_table}"."report"'
START = dt.datetime(2026, 1, 5, 3, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def fresh_cache():
    # the history is cached by snapshot pk, and pks are reused after each test's rollback
    cache.clear()
    yield
    cache.clear()


def small_report(rng: random.Random) -> dict:
    """A report's rows in a random order, Delta sometimes unranked (only "?" verdicts)."""
    order = rng.sample(METHODS, len(METHODS))
    rows = []
    for rank, name in enumerate(order, start=1):
        unranked = name == "Delta" and rng.random() < 0.3
        rows.append({"method": name, "rank": rank, "wins": 0 if unranked else 3 - rank + 1, "losses": 0,
                     "draws": 0 if unranked else 1, "unknown": 3 if unranked else 0, "mcc": 0.5,
                     "targets": 10})
    return {"protocol": "target", "methods": rows, "verdicts": {}}


def add_snapshots(subset: Subset, n: int, rng: random.Random) -> None:
    """``n`` more weekly snapshots of ``subset`` (extended pairs), each with a small report."""
    start = RankingSnapshot.objects.filter(subset=subset).count()
    made = RankingSnapshot.objects.bulk_create([
        RankingSnapshot(dataset=subset.dataset, subset=subset, definition="extended", seed=k,
                        inputs_hash=f"h{k}", inputs={"targets": 10}, report=small_report(rng))
        for k in range(start, start + n)
    ])
    for k, snap in enumerate(made, start=start):
        RankingSnapshot.objects.filter(pk=snap.pk).update(computed_at=START + dt.timedelta(weeks=k))


def from_reports(subset: Subset, limit: int) -> list[dict]:
    """The history as the reports give it (what the page showed when it read them all)."""
    snaps = list(RankingSnapshot.objects.filter(subset=subset).order_by("computed_at", "pk"))[-limit:]
    return [{"pk": s.pk, "at": s.computed_at,
             "ranks": {r["method"]: r["rank"] for r in s.report["methods"] if is_ranked(r)}} for s in snaps]


def history_queries(subset: Subset) -> list[dict]:
    cache.clear()
    newest = RankingSnapshot.objects.filter(subset=subset).defer("report", "inputs").first()
    with CaptureQueriesContext(connection) as queries:
        subset_history(newest)
    return queries.captured_queries


def test_the_history_reads_as_much_at_200_snapshots_as_at_10(django_assert_max_num_queries):
    rng = random.Random(3)
    subset = make_dataset().subsets.get(slug="all")
    sizes = {}
    for total in (10, 200):
        add_snapshots(subset, total - RankingSnapshot.objects.filter(subset=subset).count(), rng)
        store_method_standings()  # the background refresh: every snapshot's standings, old ones too
        assert snapshot_history(subset=subset, definition="extended") == from_reports(
            subset, HISTORY_SNAPSHOTS)
        captured = history_queries(subset)
        # no query reads a report (whole or in parts): the standings of at most HISTORY_SNAPSHOTS snapshots
        assert not [q for q in captured if REPORT in q["sql"]]
        standings = [q["sql"] for q in captured if MethodStanding._meta.db_table in q["sql"]]
        assert len(standings) == 1 and standings[0].count(",") < HISTORY_SNAPSHOTS + 10
        sizes[total] = (len(captured), len(snapshot_history(subset=subset, definition="extended")))
        newest = RankingSnapshot.objects.filter(subset=subset).defer("report", "inputs").first()
        cache.clear()
        with django_assert_max_num_queries(3):  # the newest snapshots, theirs and the standings
            subset_history(newest)
    assert sizes == {10: (sizes[10][0], 10), 200: (sizes[10][0], HISTORY_SNAPSHOTS)}
    figure = subset_history(RankingSnapshot.objects.filter(subset=subset).first())
    assert figure["shown"] == HISTORY_SNAPSHOTS and figure["more"]
    traces = json.loads(figure["figure"])["data"]
    assert [t["name"] for t in traces] == sorted(METHODS)
    assert max(len(t["x"]) for t in traces) == HISTORY_SNAPSHOTS


def test_a_snapshot_without_standings_is_read_from_its_own_rows_only():
    rng = random.Random(5)
    subset = make_dataset().subsets.get(slug="all")
    add_snapshots(subset, 60, rng)
    store_method_standings()
    newest = RankingSnapshot.objects.filter(subset=subset).first()
    MethodStanding.objects.filter(snapshot=newest).delete()  # stored since the last background run
    assert snapshot_history(subset=subset, definition="extended") == from_reports(subset, HISTORY_SNAPSHOTS)
    read = [q["sql"] for q in history_queries(subset) if REPORT in q["sql"]]
    assert len(read) == 1 and str(newest.pk) in read[0]
    MethodStanding.objects.all().delete()  # before the first background run: the shown snapshots' rows
    assert snapshot_history(subset=subset, definition="extended") == from_reports(subset, HISTORY_SNAPSHOTS)


def test_the_page_says_how_many_snapshots_its_history_shows(client):
    rng = random.Random(7)
    subset = make_dataset().subsets.get(slug="all")
    add_snapshots(subset, 3, rng)
    url = reverse("subset-rankings", args=["testset", "all", "extended"])
    page = client.get(url).content.decode()
    assert "Rank of each method in every snapshot of this subset" in page
    add_snapshots(subset, HISTORY_SNAPSHOTS, rng)
    cache.clear()
    page = client.get(url).content.decode()
    assert f"Rank of each method in the newest {HISTORY_SNAPSHOTS} snapshots of this subset" in page
