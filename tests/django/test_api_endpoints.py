"""The read-only REST API on factory data: content, filters, pagination, formats and the OpenAPI schema."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from django.db.models import Count

from comparna.models import RankingSnapshot, Score, Subset, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import parse_dot_bracket, read_bpseq
from predictors.models import Prediction
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db


def get(client, url, expect=200, **params):
    response = client.get(url, params, HTTP_ACCEPT="application/json")
    assert response.status_code == expect, (url, params, response.content[:500])
    return response.json()


def every(client, url, **params) -> list[dict]:
    """All results of a cursor-paged list, following ``next``."""
    page = get(client, url, **params)
    assert "count" not in page  # no total: counting would read every row
    results = list(page["results"])
    while page["next"]:
        page = client.get(page["next"], HTTP_ACCEPT="application/json").json()
        results += page["results"]
    return results


def test_datasets_with_subset_sizes(client, site):
    data = get(client, "/api/datasets/")
    assert data["count"] == 2
    by_slug = {d["slug"]: d for d in data["results"]}
    for subset in Subset.objects.annotate(n=Count("targets")):
        shown = {s["slug"]: s for s in by_slug[subset.dataset.slug]["subsets"]}[subset.slug]
        assert shown["size"] == subset.n
        assert shown["definitions"] == subset.definitions()
    assert by_slug["pdb"]["size"] == Target.objects.filter(dataset__slug="pdb").count()
    assert get(client, "/api/datasets/pdb/")["definitions"] == ["standard", "extended"]
    get(client, "/api/datasets/nope/", expect=404)


def test_targets_carry_references_in_dot_bracket_and_bpseq(client, site):
    data = get(client, "/api/targets/", dataset="pdb", page_size=100)
    assert data["count"] == Target.objects.filter(dataset__slug="pdb").count()
    multiplets = 0
    for item in data["results"]:
        target = Target.objects.get(pk=item["id"])
        for ref in item["references"]:
            stored = structure_from_text(
                target.length, target.references.get(definition=ref["definition"]).pairs
            )
            assert {tuple(p) for p in ref["pairs"]} == set(stored.pairs)
            if ref["has_multiplets"]:
                multiplets += 1
                assert ref["dot_bracket"] is None and ref["bpseq"] is None
                continue
            assert parse_dot_bracket(ref["dot_bracket"], length=target.length).pairs == stored.pairs
            sequence, structure = read_bpseq(ref["bpseq"])
            assert sequence == target.sequence and structure.pairs == stored.pairs
    assert multiplets == 1  # the base triple built into the PDB data
    # filters: subset, RNA class, release dates, and a bad date is a 400, not a 500
    pk_targets = get(client, "/api/targets/", dataset="rnastrand", subset="pseudoknotted")
    assert (
        pk_targets["count"]
        == Subset.objects.get(dataset__slug="rnastrand", slug="pseudoknotted").targets.count()
    )
    after = get(client, "/api/targets/", released_since="2025-02-01")
    assert after["count"] == Target.objects.filter(release_date__gte=dt.date(2025, 2, 1)).count() > 0
    get(client, "/api/targets/", expect=400, released_since="2025-13-45")


def test_pagination(client, site):
    first = get(client, "/api/predictions/", page_size=7)
    assert len(first["results"]) == 7 and first["next"] and first["previous"] is None
    second = client.get(first["next"], HTTP_ACCEPT="application/json").json()
    assert {p["id"] for p in first["results"]}.isdisjoint({p["id"] for p in second["results"]})
    assert max(p["id"] for p in first["results"]) < min(p["id"] for p in second["results"])
    # the cursor walks every row once, by id, without counting them
    walked = [p["id"] for p in every(client, "/api/predictions/", page_size=7)]
    assert walked == sorted(Prediction.objects.values_list("pk", flat=True))
    get(client, "/api/predictions/", expect=404, cursor="not-a-cursor")
    for raw in ("p=abc", "p=%00", "p=1.5", "p=" + "9" * 30):  # a forged position: a 404, never a 500
        get(client, "/api/scores/", expect=404, cursor=base64.b64encode(raw.encode()).decode())
    get(client, "/api/predictions/", expect=400, page=2)  # page numbers: the small lists only
    assert get(client, "/api/targets/", page_size=3, page=2)["count"] == Target.objects.count()


def test_methods_predictions_and_scores_filters(client, site):
    methods = get(client, "/api/methods/")
    assert {m["name"] for m in methods["results"]} == set(site["methods"])
    good = next(m for m in methods["results"] if m["name"] == "GoodFold")
    assert good["versions"][0]["spec"]["argv"][0] == "goodfold"
    assert get(client, "/api/methods/", input_kind="alignment")["count"] == 1
    preds = every(client, "/api/predictions/", method="MidFold", status="timeout", page_size=3)
    expected = Prediction.objects.filter(method_version__method__name="MidFold", status="timeout")
    assert len(preds) == expected.count() > 0
    assert all(p["method"] == "MidFold" and p["status"] == "timeout" and p["pairs"] == [] for p in preds)
    today = dt.date.today().isoformat()
    assert len(every(client, "/api/predictions/", since=today, page_size=500)) == Prediction.objects.count()
    assert every(client, "/api/predictions/", until="2000-01-01") == []
    get(client, "/api/predictions/", expect=400, target="x1")
    scores = every(client, "/api/scores/", dataset="pdb", method="GoodFold", definition="standard")
    rows = Score.objects.filter(
        prediction__target__dataset__slug="pdb",
        definition="standard",
        prediction__method_version__method__name="GoodFold",
    )
    assert len(scores) == rows.count()
    by_id = {s.pk: s for s in rows}
    for item in scores:
        s = by_id[item["id"]]
        assert (item["tp"], item["fp_compatible"], item["mcc"]) == (s.tp, s.fp_compatible, s.mcc)


def api_rows(snap: RankingSnapshot) -> list[dict]:
    """The report's rows as the API gives them: as stored, plus the numbers under the downloads' names
    (issue 37), derived from the stored ones."""
    common = snap.report.get("common_scores") or {}
    return [
        {**r, "mean_mcc": r.get("decided_mcc"), "mean_mcc_n": r.get("decided_targets"),
         "pooled_mcc_own_targets": r.get("mcc"),
         "pooled_mcc_common": (common.get(r["method"]) or {}).get("mcc")}
        for r in snap.report["methods"]
    ]


def test_rankings_latest_by_date_and_verdicts(client, site):
    everything = get(client, "/api/rankings/", page_size=500)
    assert everything["count"] == RankingSnapshot.objects.count()
    latest = get(client, "/api/rankings/latest/", dataset="rnastrand")
    newest = {}
    for snap in RankingSnapshot.objects.filter(dataset__slug="rnastrand").order_by("computed_at", "pk"):
        newest[(snap.subset.slug, snap.definition)] = snap.pk
    assert {(r["subset"], r["definition"]): r["id"] for r in latest} == newest
    row = next(r for r in latest if r["subset"] == "all")
    snap = RankingSnapshot.objects.get(pk=row["id"])
    assert api_rows(snap) == row["methods"] and row["seed"] == snap.seed
    # issue 27: every answer says whether the ranking is settled, with the definition's link, and which
    # verdict its rows carry (the CompaRNA 2013 protocol's stays available beside it, labelled)
    assert isinstance(row["settled"], bool) and row["state"] in ("settled", "provisional")
    assert row["settled_definition_url"].endswith("#provisional") and row["settled_definition"]
    assert row["protocol"] == "target" and row["protocol_2013"]["label"] == "CompaRNA 2013 protocol"
    assert all("rank_low" in m and "decided_mcc" in m for m in row["methods"])
    one = get(client, f"/api/rankings/{snap.pk}/")
    assert one["settled"] == row["settled"] and one["clusters"] == snap.report["clusters"]
    assert all("settled" in r for r in everything["results"])
    # as it stood ten days ago: the snapshot dated two weeks ago
    ten_days_ago = (dt.date.today() - dt.timedelta(days=10)).isoformat()
    old = get(client, "/api/rankings/latest/", dataset="rnastrand", subset="all", as_of=ten_days_ago)
    assert len(old) == 1 and old[0]["id"] != row["id"]
    assert old[0]["computed_at"] < row["computed_at"]
    day = (dt.date.today() - dt.timedelta(days=7)).isoformat()
    on_day = get(client, "/api/rankings/", date=day, page_size=500)
    assert on_day["count"] > 0 and all(r["computed_at"].startswith(day) for r in on_day["results"])
    with_new = get(client, "/api/rankings/", method="NewFold", page_size=500)
    assert all(any(m["method"] == "NewFold" for m in r["methods"]) for r in with_new["results"])
    get(client, "/api/rankings/", expect=400, date="yesterday")
    verdicts = get(client, f"/api/rankings/{snap.pk}/verdicts/")
    m = len(snap.report["methods"])
    assert len(verdicts) == m * (m - 1)
    for v in verdicts:
        assert v["verdict"] == snap.report["verdicts"][v["method_a"]][v["method_b"]]
        assert v["common_targets"] == snap.report["common_targets"][v["method_a"]][v["method_b"]]
    assert get(client, f"/api/rankings/{snap.pk}/")["inputs_hash"] == snap.inputs_hash
    get(client, "/api/rankings/999999/", expect=404)


def test_openapi_schema_and_offline_docs(client, site):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in (
        "/api/datasets/",
        "/api/targets/{id}/",
        "/api/methods/",
        "/api/predictions/",
        "/api/scores/",
        "/api/rankings/",
        "/api/rankings/latest/",
        "/api/rankings/{id}/verdicts/",
    ):
        assert path in paths, path
        assert set(paths[path]) == {"get"}  # read-only
    params = {p["name"] for p in paths["/api/predictions/"]["get"]["parameters"]}
    assert {"dataset", "method", "since", "until", "cursor", "page_size"} <= params
    assert "page" in {p["name"] for p in paths["/api/targets/"]["get"]["parameters"]}
    docs = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/" in docs and "cdn" not in docs.lower()


def test_format_suffix_on_custom_actions(client, site):
    # /latest.json and /<pk>/verdicts.json come through the format suffix: they were 500s (issue 11 fuzz).
    latest = client.get("/api/rankings/latest.json")
    assert latest.status_code == 200 and latest["Content-Type"].startswith("application/json")
    pk = latest.json()[0]["id"]
    assert client.get(f"/api/rankings/{pk}/verdicts.json").status_code == 200
    assert client.get("/api/rankings/999999999999999999/verdicts.json").status_code == 404


@pytest.mark.parametrize("value", ["²", "٣", "1" * 19, "9" * 5000, "-1"])
def test_integer_filters_and_ids_take_ascii_digits_only(client, site, value):
    assert client.get("/api/predictions/", {"target": value}).status_code == 400
    assert client.get("/api/scores/", {"target": value}).status_code == 400
    assert client.get(f"/api/predictions/{value}/").status_code == 404
    assert client.get(f"/targets/{value}/").status_code == 404
    assert client.get("/rankings/rnastrand/all/extended/", {"snapshot": value}).status_code == 404


def test_nul_in_a_url_is_a_bad_request(client, site):
    assert client.get("/api/predictions/", {"method": "a\x00b"}).status_code == 400
    assert client.get("/methods/a%00b/status/").status_code == 400


def test_targets_search_and_source_id_filters(client, site):
    """Issue 29: ``search`` and ``source_id`` filter targets (``?search=`` was ignored: every target)."""
    everything = get(client, "/api/targets/", page_size=500)["count"]
    one = Target.objects.filter(dataset__slug="rnastrand").order_by("pk").first()
    exact = get(client, "/api/targets/", source_id=one.source_id)
    assert [t["id"] for t in exact["results"]] == list(
        Target.objects.filter(source_id=one.source_id).values_list("pk", flat=True)
    )
    assert get(client, "/api/targets/", source_id=one.source_id + "x")["count"] == 0
    needle = one.source_id[1:-1].lower()  # inside the id, other case
    found = get(client, "/api/targets/", search=needle, page_size=500)
    assert 0 < found["count"] < everything
    assert one.pk in {t["id"] for t in found["results"]}
    for item in found["results"]:
        target = Target.objects.get(pk=item["id"])
        fields = (target.source_id, target.pdb_id, target.rna_class, target.family, target.organism)
        assert any(needle in f.lower() for f in fields)
    assert get(client, "/api/targets/", search="no-such-target-anywhere")["count"] == 0


@pytest.mark.parametrize(
    "url, params",
    [
        ("/api/targets/", {"serach": "tRNA"}),
        ("/api/targets/", {"dataset": "pdb", "sort": "length"}),
        ("/api/methods/", {"name": "RNAfold"}),
        ("/api/predictions/", {"methods": "x"}),
        ("/api/scores/", {"target_id": "1"}),
        ("/api/rankings/", {"as_of": "2024-01-01"}),  # a filter of latest/, not of the list
        ("/api/rankings/latest/", {"date": "2024-01-01"}),
        ("/api/datasets/", {"slug": "pdb"}),
    ],
)
def test_unknown_query_parameters_are_a_400_naming_what_is_accepted(client, site, url, params):
    body = get(client, url, expect=400, **params)
    (name,) = params if len(params) == 1 else [k for k in params if k not in ("dataset",)]
    assert name in body and "accepts" in str(body[name])


def test_known_parameters_and_pagination_still_pass(client, site):
    get(client, "/api/targets/", dataset="pdb", page=1, page_size=5, format="json")
    get(client, "/api/rankings/latest/", dataset="rnastrand", as_of="2030-01-01")
    get(client, "/api/scores/", current="true", definition="extended")


def test_rankings_list_gives_summaries_and_links_the_whole_report(client, site):
    listed = get(client, "/api/rankings/", page_size=500)["results"]
    assert listed
    for row in listed:
        snap = RankingSnapshot.objects.get(pk=row["id"])
        # each method's main columns, as the report has them; the whole report at the snapshot's endpoint
        assert [m["method"] for m in row["methods"]] == [m["method"] for m in snap.report["methods"]]
        assert all(m["rank"] == r["rank"] and m["mcc"] == r["mcc"] == m["pooled_mcc_own_targets"]
                   and m.get("mean_mcc") == r.get("decided_mcc")
                   for m, r in zip(row["methods"], snap.report["methods"], strict=True))
        assert not {"robustness", "inputs", "protocol_2013", "conventions"} & set(row)
        assert row["protocol"] == (snap.report.get("protocol") or "2013")
        whole = get(client, row["url"])
        assert whole["id"] == snap.pk and whole["methods"] == api_rows(snap) and "inputs" in whole
        assert whole["settled"] == row["settled"]


def test_rankings_list_reads_the_stored_summaries_the_same_as_the_reports(client, site):
    """The list's entries come from the summaries stored in the background (never the reports, about 10 MB
    each at 100 methods), and are the same as read from the reports before they are stored."""
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from comparna.models import RankingSnapshotSummary
    from comparna.services.summaries import store_snapshot_summaries
    from comparna.tasks import refresh_tallies_task

    RankingSnapshotSummary.objects.all().delete()
    cache.clear()
    from_reports = get(client, "/api/rankings/", page_size=500)
    refresh_tallies_task()  # the background: the tallies, each ranking's live state, the summaries
    store_snapshot_summaries()
    assert RankingSnapshotSummary.objects.count() == RankingSnapshot.objects.count() > 0
    assert store_snapshot_summaries() == 0  # each snapshot once
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        stored = get(client, "/api/rankings/", page_size=500)
    assert stored == from_reports
    assert not [q["sql"] for q in queries if '"report"' in q["sql"]]
    # a snapshot stored since the last background run is read from its report meanwhile
    RankingSnapshotSummary.objects.filter(snapshot_id=stored["results"][0]["id"]).delete()
    cache.clear()
    assert get(client, "/api/rankings/", page_size=500) == from_reports


def test_snapshot_states_read_from_the_stored_rows_are_ranking_state(client, site):
    """The list's and the method page's states (the stored live states' columns, a few queries for all) are
    :func:`ranking_state`'s, for the newest snapshot of a ranking and an older one, with and without the
    rows the background stores."""
    from django.core.cache import cache

    from comparna.services.pages.ranking_status import snapshot_states
    from comparna.services.progress import ranking_state
    from comparna.tallies.models import RankingStatus
    from comparna.tasks import refresh_tallies_task

    snapshots = list(RankingSnapshot.objects.select_related("dataset", "subset").defer("report", "inputs"))
    refresh_tallies_task()
    assert RankingStatus.objects.exists()
    for stored in (True, False):
        if not stored:
            RankingStatus.objects.all().delete()
        cache.clear()
        states = snapshot_states(snapshots)
        for snap in snapshots:
            expected = ranking_state(snap)
            assert (states[snap.pk]["label"], states[snap.pk]["reasons"]) == (
                expected["label"], expected["reasons"]), snap
    assert any("a newer snapshot" in " ".join(states[s.pk]["reasons"]) for s in snapshots)
