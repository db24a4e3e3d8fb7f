"""Pages read counts precomputed in the background, never the predictions table (issue 28).

The tallies (``comparna.services.tallies``) must say exactly what counting the predictions live says, the
pages that show progress and settled state must not read the predictions table once they exist, and a
snapshot's "scores changed" state must follow the scores.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from comparna.models import Score
from comparna.services import progress, tallies
from comparna.services.pages.families import _breakdown, family_breakdown, refresh_family_summaries
from comparna.services.pages.methods import method_rank_history, method_rankings, store_method_standings
from comparna.services.pages.rankings import ranking_rows, store_ranking_rows
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from comparna.tallies.models import PredictionTally, RankingFreshness, TallyRun
from predictors.models import Method, Prediction
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

PREDICTIONS_TABLE = re.compile(r'FROM "predictors_prediction"|JOIN "predictors_prediction"')


def _shape(result: dict) -> dict:
    keep = ("total", "finished", "pending", "by_status", "recent", "workers_left")
    methods = [{k: m[k] for k in ("method", "total", "finished", "pending", "ok", "failed", "recent")}
               for m in result["methods"]]
    return {**{k: result[k] for k in keep}, "methods": methods}


def test_tallied_progress_equals_live_counts(world):  # noqa: F811
    live = {scope: progress.prediction_progress(**kw, live=True) for scope, kw in (
        ("all", {}), ("dataset", {"dataset": world["all"].dataset}), ("subset", {"subset": world["few"]}))}
    run = tallies.refresh_tallies()
    assert run.pk and PredictionTally.objects.filter(run=run).exists()
    for scope, kw in (("all", {}), ("dataset", {"dataset": world["all"].dataset}),
                      ("subset", {"subset": world["few"]})):
        tallied = progress.prediction_progress(**kw)
        assert _shape(tallied) == _shape(live[scope]), scope
        assert tallied["rate_per_min"] == pytest.approx(live[scope]["rate_per_min"], rel=0.05)
    # a new queued prediction is not seen until the next refresh, then it is
    Prediction.objects.filter(status=Prediction.Status.TIMEOUT).update(status=Prediction.Status.QUEUED)
    assert progress.prediction_progress()["pending"] == live["all"]["pending"]
    tallies.refresh_tallies()
    assert progress.prediction_progress()["pending"] == progress.prediction_progress(live=True)["pending"]
    assert TallyRun.objects.count() == 1  # a refresh replaces the previous one


def test_pages_read_no_prediction_rows_once_tallied(client, world):  # noqa: F811
    dataset = world["all"].dataset
    for subset in (world["all"], world["few"]):
        rank_subset(subset=subset, definition="extended")
    tallies.refresh_tallies()
    assert refresh_family_summaries() == 1
    assert store_ranking_rows() >= 2  # the newest snapshot of each subset, under each protocol it has
    cache.clear()
    pages = [
        reverse("home"),
        reverse("dataset-rankings", args=[dataset.slug]),
        reverse("subset-rankings", args=[dataset.slug, "all", "extended"]),
        reverse("subset-rankings", args=[dataset.slug, "few", "extended"]),
        reverse("dataset-families", args=[dataset.slug]),
        "/api/rankings/",
    ]
    for path in pages:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(path, HTTP_ACCEPT="text/html,application/json")
        assert response.status_code == 200, path
        touching = [q["sql"][:200] for q in queries if PREDICTIONS_TABLE.search(q["sql"])]
        assert touching == [], path


def test_settled_state_follows_the_scores(world):  # noqa: F811
    subset = world["few"]
    # Delta (everything queued) withdrawn: nothing unfinished on the six targets, the ranking can settle
    Method.objects.filter(name="Delta").update(active=False)
    snapshot, _ = rank_subset(subset=subset, definition="extended")
    busy, _ = rank_subset(subset=world["all"], definition="extended")  # Alpha still queued on two targets
    tallies.refresh_tallies()
    assert tallies.inputs_current(snapshot) is True
    assert progress.ranking_state(snapshot)["settled"] is True
    # a subset with unfinished predictions is provisional anyway: its inputs are not checked
    assert not RankingFreshness.objects.filter(snapshot=busy).exists()
    assert progress.ranking_state(busy)["settled"] is False
    live = progress.ranking_state(snapshot, live=True)
    assert progress.ranking_state(snapshot)["reasons"] == live["reasons"]
    # a score changes in place (re-scoring): found at the next check of that snapshot
    score = Score.objects.filter(prediction__target__subsets=subset, definition="extended").first()
    Score.objects.filter(pk=score.pk).update(tp=score.tp + 1)
    long_ago = timezone.now() - dt.timedelta(hours=1)
    RankingFreshness.objects.filter(snapshot=snapshot).update(checked_at=long_ago)
    tallies.refresh_tallies()
    assert tallies.inputs_current(snapshot) is False


def test_family_summaries_are_the_live_numbers_and_follow_new_scores(world):  # noqa: F811
    dataset = world["all"].dataset
    assert refresh_family_summaries() == 1
    assert refresh_family_summaries() == 0  # nothing changed: not recomputed
    shown = family_breakdown(dataset, "extended")
    live = _breakdown(dataset, "extended")
    assert [m["method"] for m in shown["methods"]] == [m["method"] for m in live["methods"]]
    assert [m["overall"]["mean"] for m in shown["methods"]] == pytest.approx(
        [m["overall"]["mean"] for m in live["methods"]])
    # a newly scored prediction: the next refresh recomputes that dataset
    p = Prediction.objects.filter(method_version=world["versions"]["Delta"]).first()
    p.pairs, p.status = "", Prediction.Status.OK
    p.save()
    score_prediction(prediction=p)
    assert refresh_family_summaries() == 1
    assert "Delta" in [m["method"] for m in family_breakdown(dataset, "extended")["methods"]]


def test_stored_ranking_rows_are_the_computed_ones(world):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    assert store_ranking_rows() >= 1
    assert store_ranking_rows() == 0  # stored once per snapshot
    computed = ranking_rows(snapshot, compute_only=True)
    cache.clear()
    shown = ranking_rows(snapshot)
    assert [(r["method"], r["rank_text"], r["ranked"]) for r in shown] == [
        (r["method"], r["rank_text"], r["ranked"]) for r in computed]
    assert [r["mean_mcc"] and r["mean_mcc"]["mean"] for r in shown] == pytest.approx(
        [r["mean_mcc"] and r["mean_mcc"]["mean"] for r in computed])


def test_method_standings_are_what_the_reports_say(world):  # noqa: F811
    for subset in (world["all"], world["few"]):
        rank_subset(subset=subset, definition="extended")
    method = Method.objects.get(name="Beta")
    cache.clear()
    live, history = method_rankings(method), method_rank_history(method)  # from the reports
    assert len(live) == 2 and history
    assert store_method_standings() == 2
    assert store_method_standings() == 0  # each snapshot once
    cache.clear()
    keys = ("snapshot", "rank", "rank_low", "rank_high", "of", "mcc", "targets", "settled", "protocol")
    shown = [{k: r[k] for k in keys} for r in method_rankings(method)]
    assert shown == [{k: r[k] for k in keys} for r in live]
    assert method_rank_history(method) == history


def test_rankings_index_counts_methods_without_loading_reports(client, world):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("rankings-index")).content.decode()
    n, targets = len(snapshot.report["methods"]), snapshot.inputs["targets"]
    assert f'<td class="num">{n}</td><td class="num">{targets}</td>' in page
    # the report (it grows with the square of the methods) is measured by the database, never sent
    assert not any(re.search(r'"comparna_rankingsnapshot"\."report"(?!\s*->)', q["sql"])
                   and "array_length" not in q["sql"] for q in queries)
