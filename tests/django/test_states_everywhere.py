"""States everywhere (issue 37, items 3 and 4): a dataset snapshot taken before its predictions settled says
"provisional" with the ranking pages' reason wherever it is listed or linked; the family-clustered figures
say when families are still being assigned; comparative methods are shown waiting for their inputs, not run
on every target; the home page's top five follow the ranking's own order, ties by mean MCC.
"""

from __future__ import annotations

import html
import re

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.services import progress, tallies
from comparna.services.pages.ranking_status import compute_live
from comparna.services.pages.rankings import glance_order
from comparna.snapshots.models import DatasetSnapshot
from ingest.models import FamilyAssignment
from predictors.models import Method
from tests.web_data import build_provisional_dataset, site_fixture  # noqa: F401 - `site` fixture

pytestmark = pytest.mark.django_db


def text(response) -> str:
    assert response.status_code == 200
    words = html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split()
    return " ".join(words).replace(" :", ":")


def test_a_snapshot_taken_before_the_predictions_settled_says_so_everywhere(site):
    dataset = Dataset.objects.get(slug="rnastrand")
    early = DatasetSnapshot.objects.create(
        dataset=dataset, number=901, status="done", path="x/901.tar.gz", size=10, sha256="a" * 64,
        contents={"targets": 24, "unfinished_predictions": 123},
    )
    DatasetSnapshot.objects.create(
        dataset=dataset, number=902, status="done", path="x/902.tar.gz", size=10, sha256="b" * 64,
        contents={"targets": 24, "unfinished_predictions": 0},
    )
    reason = progress.pending_reason(123)  # the ranking pages' words
    assert reason == "123 predictions of active methods still unfinished"
    client = Client()
    cache.clear()
    listed = text(client.get(f"/snapshots/{dataset.slug}/"))
    assert f"901 {early.created_at:%Y-%m-%d %H:%M} Done — provisional: {reason} when it was taken" in listed
    assert re.search(r"902 \S+ \S+ Done \d", listed)  # settled: no mark
    assert f"Done — provisional: {reason} when it was taken" in text(client.get("/snapshots/"))
    detail = text(client.get(f"/snapshots/{dataset.slug}/901/"))
    assert "Status Done — provisional" in detail and f"Provisional: {reason} when it was taken" in detail
    settled = text(client.get(f"/snapshots/{dataset.slug}/902/"))
    assert "provisional" not in settled.lower()
    # the home page links the newest done one: marked when provisional
    early.number, early.pk = 903, None
    early.save()
    cache.clear()
    home = text(client.get("/"))
    assert f"Snapshot 903 ({early.created_at:%Y-%m-%d}, provisional)" in home


def test_families_pending_is_said_until_every_target_has_its_family(site):
    subset = Subset.objects.get(dataset__slug="rnastrand", slug="all")
    snap = RankingSnapshot.objects.filter(subset=subset).first()
    url = reverse("subset-rankings", args=["rnastrand", "all", snap.definition])
    members = list(subset.targets.all())
    FamilyAssignment.objects.filter(target__in=members).delete()
    unassigned = [t for t in members if t.family_source != "dataset"]
    assert unassigned
    tallies.refresh_tallies()
    assigned, total = tallies.families_assigned(subset=subset)
    assert (assigned, total) == (len(members) - len(unassigned), len(members))
    cache.clear()
    page = text(Client().get(url))
    assert f"Families pending: {assigned} of {total} targets assigned." in page
    # cmscan reaches every target (found a family or not): the claim holds, the note goes
    FamilyAssignment.objects.bulk_create(
        [FamilyAssignment(target=t, rfam_version="14.10", accession="") for t in unassigned]
    )
    tallies.refresh_tallies()
    assert tallies.families_assigned(subset=subset) == (total, total)
    cache.clear()
    assert "Families pending" not in text(Client().get(url))


def test_comparative_methods_are_shown_waiting_for_their_inputs(site):
    made = build_provisional_dataset()
    snap = RankingSnapshot.objects.get(pk=made["snapshot"])
    reasons = {m["method"]: m["reason"] for m in compute_live(snap)["not_ranked"]}
    assert reasons["AliFold(seed)"].startswith("waiting for its inputs")
    comparative = Method.objects.public().filter(active=True).exclude(input_kind="single").count()
    single = Method.objects.public().filter(active=True, input_kind="single").count()
    assert comparative and single
    ready, of = tallies.comparative_input_targets()
    assert ready < of
    cache.clear()
    home = text(Client().get("/"))
    assert f"{single} single-sequence methods are run on every target" in home
    plural = ("s", "run") if comparative != 1 else ("", "runs")
    assert (f"{comparative} comparative method{plural[0]} {plural[1]} on a target once its Rfam family and "
            f"homologues are in — waiting for their inputs: {ready} of {of} targets have them so far") in home
    assert f"{single + comparative} active methods are run on every target" not in home


def test_the_glance_follows_the_ranks_and_orders_ties_by_mean_mcc():
    rows = [
        {"method": "Alpha", "rank": 1, "decided_mcc": 0.51},
        {"method": "beta", "rank": 1, "decided_mcc": 0.74},
        {"method": "Gamma", "rank": 1, "decided_mcc": 0.62},
        {"method": "Delta", "rank": 2, "decided_mcc": 0.95},  # a higher MCC, a worse rank: stays below
        {"method": "Eps", "rank": 1, "decided_mcc": None, "mean_mcc": {"mean": 0.60}},
        {"method": "Zeta", "rank": 1, "decided_mcc": 0.62},
    ]
    assert [r["method"] for r in glance_order(rows)] == ["beta", "Gamma", "Zeta", "Eps", "Alpha", "Delta"]
