"""Poll pages, downloadable comparative inputs, and the ranking → dataset snapshot link."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from comparna.models import RankingSnapshot
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from comparna.snapshots.lifecycle import build_snapshot, make_snapshot_if_changed
from ingest.models import ComparativeInput, FamilyAssignment, PdbEntry, PollRun
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db


def test_poll_pages_show_counts_and_each_failure_reason(client):
    run = PollRun.objects.create(since=dt.date(2024, 1, 1), until=dt.date(2024, 1, 7), found=3, new=2,
                                 skipped=1, failed=1, done=2, status="done")
    PdbEntry.objects.create(pdb_id="1JJP", poll=run, status="gone", reason="HTTP 404 on download", attempts=1)
    listing = client.get(reverse("poll-list")).content.decode()
    assert "2024-01-01 – 2024-01-07" in listing and ">3<" in listing
    detail = client.get(reverse("poll-detail", args=[run.pk])).content.decode()
    assert "1JJP" in detail and "HTTP 404 on download" in detail


def test_comparative_inputs_download_and_show_on_the_target_page(client):
    target = make_target("GGGAAACCCAGGGAAACCCA", "(((...)))...........")
    FamilyAssignment.objects.create(target=target, rfam_version="v1", accession="RF00005", family_id="tRNA",
                                    evalue=1e-9, coverage=0.9)
    ComparativeInput.objects.create(target=target, kind="20", rfam_version="v1", accession="RF00005",
                                    query_name="query", random_seed=42, sequences=">query\nGGG\n",
                                    alignment="# STOCKHOLM 1.0\nquery GGG\n//\n")
    page = client.get(reverse("target-detail", args=[target.pk])).content.decode()
    assert "tRNA (RF00005)" in page and "random seed 42" in page
    fasta = client.get(reverse("comparative-input", args=[target.pk, "20", "fasta"]))
    assert fasta.status_code == 200 and fasta.content == b">query\nGGG\n"
    assert client.get(reverse("comparative-input", args=[target.pk, "seed", "sto"])).status_code == 404


def test_ranking_page_links_the_dataset_snapshot_of_its_data(client, settings, tmp_path):
    settings.SNAPSHOT_DIR = tmp_path
    version = make_method_version("Alpha")
    for predicted in ("(((...))).........." + ".", "((....))............", "...................."):
        target = make_target("GGGAAACCCAGGGAAACCCA", "(((...)))...........")
        score_prediction(prediction=make_prediction(version, target, predicted))
    ranking, _ = rank_subset(subset=target.subsets.get(slug="all"), definition="extended", seed=1)
    snapshot = make_snapshot_if_changed(target.dataset, background=False)
    if snapshot.status != "done":
        build_snapshot(snapshot.pk)
    url = reverse("subset-rankings", args=[target.dataset.slug, "all", "extended"])
    page = client.get(url).content.decode()
    assert RankingSnapshot.objects.count() == 1
    assert f"dataset snapshot #{snapshot.number}" in page
