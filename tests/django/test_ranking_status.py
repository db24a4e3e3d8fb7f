"""A ranking's live state (settled or provisional, progress with its ETA, the methods not ranked and why) and
its size are stored in the background (``tallies.RankingStatus``, by the tallies refresh, issue 28): the pages
read one row per snapshot and show exactly what computing it in the request shows, and compute it when no
usable row exists."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from comparna.services import tallies
from comparna.services.pages.ranking_status import (
    _decode,
    _encode,
    compute_live,
    newest_snapshots,
    ranking_live,
    ranking_lives,
    store_ranking_status,
)
from comparna.services.pages.rankings import newest_snapshot_summaries, store_ranking_rows
from comparna.services.rankings import rank_subset
from comparna.tallies.models import RankingStatus
from comparna.tasks import refresh_tallies_task
from predictors.models import Method, Prediction
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

REPORT = re.compile(r'"comparna_rankingsnapshot"\."report"')
PAGES = (
    ("home", ()),
    ("rankings-index", ()),
    ("dataset-rankings", ("testset",)),
    ("subset-rankings", ("testset", "all", "extended")),
    ("subset-rankings", ("testset", "few", "extended")),
    ("ranking-matrix", ("testset", "all", "extended")),
)


def _pages(client) -> dict[str, str]:
    out = {}
    for name, args in PAGES:
        cache.clear()
        response = client.get(reverse(name, args=args))
        assert response.status_code == 200, name
        out[reverse(name, args=args)] = response.content.decode()
    return out


def _shown(live: dict) -> dict:
    prog = live["progress"]
    return {
        "state": {k: live["state"][k] for k in ("settled", "label", "reasons", "pending")},
        "progress": (prog["finished"], prog["pending"], prog["eta"], prog["now"], prog["rate_per_min"]),
        "methods": [(m["method"], m["finished"], m["eta"]) for m in prog["methods"]],
        **{k: live[k] for k in ("not_ranked", "stamp", "n_methods", "n_targets", "common_targets_ranked",
                                "dataset_version")},
    }


def test_the_refresh_stores_what_the_pages_computed_and_they_show_the_same(client, world):  # noqa: F811
    snaps = [rank_subset(subset=world[s], definition="extended")[0] for s in ("all", "few")]
    tallies.refresh_tallies()
    store_ranking_rows()
    assert not RankingStatus.objects.exists()
    computed = {}
    for snap in snaps:
        cache.clear()
        computed[snap.pk] = compute_live(snap)
    before = _pages(client)  # computed in the request: nothing stored yet
    assert "no prediction finished yet (20 queued or running)" in before[
        reverse("subset-rankings", args=("testset", "all", "extended"))]

    assert store_ranking_status() == 2  # from the same counts: the newest snapshot of each subset
    assert set(RankingStatus.objects.values_list("snapshot_id", flat=True)) == {s.pk for s in snaps}
    for snap in snaps:
        cache.clear()
        stored = ranking_live(snap)
        assert _shown(stored) == _shown(computed[snap.pk])
        assert stored["n_targets"] == snap.inputs["targets"]
        assert stored["n_methods"] == len(snap.report["methods"])
        assert stored["common_targets_ranked"] == snap.report.get("common_targets_ranked")
    # every page shows the same, and the ranking pages read no report to show it
    assert _pages(client) == before
    for name, args in PAGES[:3]:
        cache.clear()
        with CaptureQueriesContext(connection) as queries:
            client.get(reverse(name, args=args))
        assert not [q["sql"][:200] for q in queries if REPORT.search(q["sql"])], name
    # the periodic task stores them right after the counts, in place (one row per newest snapshot)
    stored_at = dict(RankingStatus.objects.values_list("snapshot_id", "tally_at"))
    refresh_tallies_task()
    assert RankingStatus.objects.count() == 2
    assert all(row.tally_at > stored_at[row.snapshot_id] for row in RankingStatus.objects.all())


def test_progress_is_stored_as_json_with_its_exact_times(world):  # noqa: F811
    snap, _ = rank_subset(subset=world["all"], definition="extended")
    tallies.refresh_tallies()
    prog = compute_live(snap)["progress"]
    assert prog["eta"] is not None and prog["methods"][0]["eta"] is not None
    assert _decode(_encode(prog)) == prog


def test_a_newer_snapshot_a_missing_or_stale_row_and_the_fallback(world):  # noqa: F811
    old, _ = rank_subset(subset=world["all"], definition="extended")
    assert ranking_live(old)["state"]["label"] == "provisional"  # no tallies, no row: computed live
    tallies.refresh_tallies()
    assert store_ranking_status() == 1
    cache.clear()
    stamp = ranking_live(old)["stamp"]
    # Delta withdrawn and the queued ones finished: a new snapshot, newer than the stored row
    Method.objects.filter(name="Delta").update(active=False)
    Prediction.objects.filter(status=Prediction.Status.QUEUED).update(
        status=Prediction.Status.TIMEOUT, finished_at=timezone.now())
    new, created = rank_subset(subset=world["all"], definition="extended")
    assert created
    assert newest_snapshots(dataset=new.dataset) == {(world["all"].pk, "extended"): new}  # one query
    cache.clear()
    lives = ranking_lives([old, new])
    # the old snapshot's row is read, and says at once that a newer snapshot exists
    assert "a newer snapshot of this ranking exists" in lives[old.pk]["state"]["reasons"]
    assert lives[old.pk]["stamp"] != stamp and lives[old.pk]["n_methods"] == 3
    # the new one has no row yet: computed as before (from the tallies of the last count)
    cache.clear()
    assert _shown(lives[new.pk]) == _shown(compute_live(new))
    # the next refresh stores the new snapshot's and drops the old one's
    tallies.refresh_tallies()
    assert store_ranking_status() == 1
    assert list(RankingStatus.objects.values_list("snapshot_id", flat=True)) == [new.pk]
    cache.clear()
    assert ranking_live(new)["state"]["settled"] is True
    # a row is read while it was counted within STALE of the current tallies, not after
    marked = [{"method": "Marked", "pk": None, "reason": "from the row", "scored": 0, "pending": 0}]
    RankingStatus.objects.filter(snapshot=new).update(not_ranked=marked)
    cache.clear()
    assert ranking_live(new)["not_ranked"] == marked
    RankingStatus.objects.filter(snapshot=new).update(tally_at=timezone.now() - dt.timedelta(hours=1))
    cache.clear()
    assert ranking_live(new)["not_ranked"] == compute_live(new)["not_ranked"] != marked


def test_rankings_index_reads_the_stored_sizes(client, world):  # noqa: F811
    snap, _ = rank_subset(subset=world["all"], definition="extended")
    live = newest_snapshot_summaries(dataset=snap.dataset)  # measured by the database without a row
    tallies.refresh_tallies()
    store_ranking_status()
    RankingStatus.objects.update(n_methods=41)
    stored = newest_snapshot_summaries(dataset=snap.dataset)
    assert [(s.pk, s.n_targets) for s in stored] == [(s.pk, s.n_targets) for s in live]
    assert [s.n_methods for s in live] == [3] and [s.n_methods for s in stored] == [41]


def test_target_counts_are_counted_with_the_tallies(client, world):  # noqa: F811
    cache.clear()
    before = client.get(reverse("datasets")).content  # counted in the request
    assert tallies.target_counts() is None
    tallies.refresh_tallies()
    assert tallies.target_counts() == {
        "datasets": {world["all"].dataset_id: 20},
        "subsets": {world["all"].pk: 20, world["few"].pk: 6},
    }
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("datasets")).content == before
    assert not [q["sql"] for q in queries if 'COUNT("comparna_target' in q["sql"]]
    cache.clear()
    assert re.search(r'<td class="num">20</td>', client.get(reverse("home")).content.decode())
