"""A comparison page names a ranking snapshot, so it uses that snapshot's data (its common targets, method
versions and verdict), as do its CSV and the pair download — or it says "live". One verdict per page; the
other statistics are labelled secondary; no common target gives an empty state, not a table of zeros."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from comparna.models import RankingSnapshot
from predictors.models import Method
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db

ARGS = ["rnastrand", "all", "extended"]


def snapshots():
    return list(
        RankingSnapshot.objects.filter(
            dataset__slug="rnastrand", subset__slug="all", definition="extended"
        ).order_by("computed_at", "pk")
    )


def matrix_cell(client, snap, a: Method, b: Method) -> int:
    """The common-target count of the lower triangle of the snapshot's matrix page for (a, b)."""
    page = client.get(reverse("ranking-matrix", args=ARGS) + f"?snapshot={snap.pk}").content.decode()
    names = [m["method"] for m in snap.report["methods"]]
    first, second = (a, b) if names.index(a.name) > names.index(b.name) else (b, a)
    link = reverse("method-comparison", args=[*ARGS, first.pk, second.pk])
    return int(re.search(re.escape(link) + r'\?snapshot=\d+" title="[^"]*">([^<]*)</a>', page).group(1))


def test_an_older_snapshot_comparison_uses_its_own_common_targets(client, site):
    oldest, newest = snapshots()[0], snapshots()[-1]
    good, mid = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    url = reverse("method-comparison", args=[*ARGS, good.pk, mid.pk])
    old_n = oldest.report["common_targets"]["GoodFold"]["MidFold"]
    new_n = newest.report["common_targets"]["GoodFold"]["MidFold"]
    assert old_n < new_n  # the first round predicted 60 % of the targets: the numbers must differ
    for snap, n in ((oldest, old_n), (newest, new_n)):
        page = client.get(url + f"?snapshot={snap.pk}").content.decode()
        assert 'data-source="snapshot"' in page
        assert (
            re.search(r'id="n-common">(\d+)<', page).group(1)
            == str(n)
            == str(matrix_cell(client, snap, good, mid))
        )
        assert len(re.findall(r"<tr><td><a href=\"/targets/", page)) == n  # the per-target rows
        # the one verdict is the snapshot's, with no competing headline verdict
        verdict = re.search(r'id="test-verdict">([^<]+)<', page).group(1).replace("−", "-")
        assert verdict == snap.report["verdicts"]["GoodFold"]["MidFold"] and 'id="verdict-note"' not in page
        assert page.count('class="verdict"') == 1
        assert (
            page.index('id="test-verdict"') < page.index('id="secondary"') < page.index('id="paired-verdict"')
        )
        assert "Paired verdict (Xu et al.)" in page and "do <strong>not</strong> change the verdict" in page
        # its CSV and the pair download carry the same targets
        rows = list(
            csv.DictReader(io.StringIO(client.get(url + f"data.csv?snapshot={snap.pk}").content.decode()))
        )
        assert len(rows) == n
        pair = client.get(
            reverse("snapshots:pair-download", args=["rnastrand", "GoodFold", "MidFold"])
            + f"?subset=all&ranking={snap.pk}"
        )
        assert pair.status_code == 200 and f"-ranking{snap.pk}.csv" in pair["Content-Disposition"]
        body = list(csv.DictReader(io.StringIO(b"".join(pair.streaming_content).decode())))
        assert sorted(r["target"] for r in body) == sorted(r["target"] for r in rows)
    # without ranking=, the pair download is the live data and says so in its name
    live = client.get(
        reverse("snapshots:pair-download", args=["rnastrand", "GoodFold", "MidFold"]) + "?subset=all"
    )
    assert "-live.csv" in live["Content-Disposition"]


def test_no_common_target_is_an_empty_state_and_old_snapshots_say_live(client, site):
    oldest = snapshots()[0]
    good, new = Method.objects.get(name="GoodFold"), Method.objects.get(name="NewFold")
    assert "NewFold" not in oldest.report["common_targets"]  # registered after the first snapshot
    url = reverse("method-comparison", args=[*ARGS, good.pk, new.pk]) + f"?snapshot={oldest.pk}"
    page = client.get(url).content.decode()
    assert 'id="empty-state"' in page and 'id="n-common">0<' in page
    assert "NewFold scored 0." in page
    assert (
        'id="pooled-counts"' not in page and 'id="test-verdict"' not in page and 'id="per-target"' not in page
    )
    # a snapshot from before stored target sets: the page uses current scores and says "live"
    newest = snapshots()[-1]
    report = {k: v for k, v in newest.report.items() if k not in ("target_sources", "scored")}
    RankingSnapshot.objects.filter(pk=newest.pk).update(report=report)
    from django.core.cache import cache

    cache.clear()
    mid = Method.objects.get(name="MidFold")
    page = client.get(
        reverse("method-comparison", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={newest.pk}"
    ).content.decode()
    assert 'data-source="live"' in page and "Live data" in page and "CSV, live" in page
    cache.clear()


def test_a_new_method_version_leaves_the_snapshot_pages_on_the_ranked_version(client, site):
    """(Last in the module: it changes the site data.) A new MidFold version predicts an empty structure
    everywhere; the snapshot's comparison and mean MCC stay those of the version it ranked."""
    from django.core.cache import cache

    from comparna.services.scoring import score_prediction
    from predictors.models import MethodVersion, Prediction

    newest = snapshots()[-1]
    good, mid = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    url = reverse("method-comparison", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={newest.pk}"
    before = client.get(url).content.decode()
    ranking_url = reverse("subset-rankings", args=ARGS) + f"?snapshot={newest.pk}"
    mean_before = re.search(
        r'data-method="MidFold".*?class="num ci" data-value="([^"]+)"',
        client.get(ranking_url).content.decode(),
        re.S,
    ).group(1)
    old = mid.current_version
    MethodVersion.objects.filter(pk=old.pk).update(is_current=False)
    new = MethodVersion.objects.create(
        method=mid, version="2.0", program=old.program, spec=old.spec, fingerprint="f" * 64, is_current=True,
        approved_at=old.approved_at,
    )
    for p in Prediction.objects.filter(method_version=old, status="ok"):
        score_prediction(
            prediction=Prediction.objects.create(method_version=new, target=p.target, status="ok")
        )
    cache.clear()
    after = client.get(url).content.decode()
    for pattern in (
        r'id="n-common">(\d+)<',
        r'id="test-verdict">([^<]+)<',
        r'id="paired-diff" data-value="([^"]+)"',
    ):
        assert re.search(pattern, after).group(1) == re.search(pattern, before).group(1), pattern
    mean_after = re.search(
        r'data-method="MidFold".*?class="num ci" data-value="([^"]+)"',
        client.get(ranking_url).content.decode(),
        re.S,
    ).group(1)
    assert mean_after == mean_before
    cache.clear()


def test_the_pair_zip_holds_both_csvs_and_a_readme_of_every_column(client, site):
    """Issue 29: one zip of the pair's data — the page's counts, the structures of both methods and the
    reference on the same targets, and a README naming every column."""
    import zipfile

    good, mid = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    for snap in (snapshots()[0], snapshots()[-1]):
        page_url = reverse("method-comparison", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={snap.pk}"
        page = client.get(page_url).content.decode()
        zip_url = reverse("method-comparison-zip", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={snap.pk}"
        assert zip_url.replace("&", "&amp;") in page  # linked from the comparison page
        response = client.get(zip_url)
        assert response.status_code == 200 and response["Content-Type"] == "application/zip"
        assert response["Content-Disposition"].endswith('.zip"')
        archive = zipfile.ZipFile(io.BytesIO(response.content))
        assert sorted(archive.namelist()) == ["README.txt", "counts.csv", "structures.csv"]
        counts = list(csv.DictReader(io.StringIO(archive.read("counts.csv").decode())))
        structures = list(csv.DictReader(io.StringIO(archive.read("structures.csv").decode())))
        n = snap.report["common_targets"]["GoodFold"]["MidFold"]
        assert len(counts) == n  # the page's common targets
        assert archive.read("counts.csv").decode() == client.get(
            reverse("method-comparison-csv", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={snap.pk}"
        ).content.decode()
        assert sorted(r["target"] for r in structures) == sorted(r["target"] for r in counts)
        for row in structures:
            assert row["reference_pairs"] and row["a_status"] and row["b_status"]
        readme = archive.read("README.txt").decode()
        assert "GoodFold" in readme and "MidFold" in readme
        for column in [*counts[0], *structures[0]]:
            line = next(x for x in readme.splitlines() if x.strip().startswith(f"{column}:"))
            assert len(line.split(":", 1)[1].strip()) > 5, f"README: no meaning for {column}"
    assert client.get(reverse("method-comparison-zip", args=[*ARGS, good.pk, good.pk])).status_code == 404


def test_the_comparison_draws_mean_mcc_with_intervals_overall_per_length_and_per_family(client, site):
    """Issue 29: the original CompaRNA comparison page's charts — mean MCC with its CI, and per family."""
    import json

    good, mid = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    page = client.get(reverse("method-comparison", args=[*ARGS, good.pk, mid.pk])).content.decode()

    def figure(chart_id):
        raw = re.search(rf'<script type="application/json" id="{chart_id}-json">(.*?)</script>', page, re.S)
        assert raw, chart_id
        assert f'data-figure="{chart_id}"' in page
        return json.loads(raw.group(1))

    families = re.findall(r'<table class="data compact" id="by-family">.*?</table>', page, re.S)[0]
    family_rows = re.findall(r"<tr><td>([^<]*)</td><td class=\"num\">(\d+)", families)
    for chart_id, expected_groups in (("means", None), ("families", family_rows)):
        fig = figure(chart_id)
        assert [t["name"] for t in fig["data"]] == ["GoodFold", "MidFold"]
        for trace in fig["data"]:
            assert len(trace["x"]) == len(trace["y"]) == len(trace["error_y"]["array"])
            assert all(0 <= lo <= 2 and 0 <= hi <= 2 for lo, hi in
                       zip(trace["error_y"]["arrayminus"], trace["error_y"]["array"], strict=True))
        labels = fig["data"][0]["x"]
        if expected_groups is not None:  # one point per family of the table, with its n
            assert labels == [f"{g or 'unknown'} (n = {n})" for g, n in expected_groups]
        else:
            n_common = int(re.search(r'id="n-common">(\d+)<', page).group(1))
            assert labels[0] == f"all common targets (n = {n_common})"


def test_a_comparison_reads_only_the_common_targets_scores(site):
    """The comparison asks for the two methods' scores on their common targets only (by id), from the
    report's bitmaps, never the whole report; a pair without a common target reads no score at all."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from comparna.services.pages.snapshot_data import scored_counts, snapshot_scores
    from comparna.services.ranking_scope import scored_targets

    snap = RankingSnapshot.objects.defer("report").get(pk=snapshots()[0].pk)
    whole = RankingSnapshot.objects.get(pk=snap.pk).report
    common = scored_targets(whole, "GoodFold") & scored_targets(whole, "MidFold")
    assert 0 < len(common) < len(whole["target_sources"])
    with CaptureQueriesContext(connection) as queries:
        got = snapshot_scores(snap, ["GoodFold", "MidFold"], common_only=True)
    assert {s.source_id for s in got} == common and len(got) == 2 * len(common)
    every = snapshot_scores(snap, ["GoodFold", "MidFold"])
    assert sorted((s.method, s.source_id) for s in got) == sorted(
        (s.method, s.source_id) for s in every if s.source_id in common
    )
    assert not any('"report"' in q["sql"] and "->" not in q["sql"] and "#>" not in q["sql"]
                   for q in queries.captured_queries if "ranking" in q["sql"].lower())
    counts = scored_counts(snap, ["GoodFold", "MidFold", "NoSuchFold"])
    assert counts == {"GoodFold": len(scored_targets(whole, "GoodFold")),
                      "MidFold": len(scored_targets(whole, "MidFold")), "NoSuchFold": 0}
    with CaptureQueriesContext(connection) as queries:
        assert snapshot_scores(snap, ["GoodFold", "NoSuchFold"], common_only=True) == []
    from comparna.models import Score

    assert not any(Score._meta.db_table in q["sql"] for q in queries.captured_queries)
