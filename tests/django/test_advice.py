"""The advisor (issue 40) through its real path: the form and the API, the worker's steps called as the
Celery tasks call them (real cmscan with the server's Rfam library, real predictors in the sandbox), the
results page, drawings, downloads, limits and expiry by the project clock."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.test import override_settings
from django.urls import reverse

from comparna import clock
from comparna.advice import pages, services
from comparna.advice.models import AdviceQuery, AdviceRequest, AdviceRun, Status
from comparna.rna.formats import read_bpseq
from predictors.models import Method
from tests.support.advice_data import TOP, TRNA_PHE, build_advice_benchmark

pytestmark = pytest.mark.django_db


@pytest.fixture
def benchmark(db):
    return build_advice_benchmark()


def _work_out(advice: AdviceRequest) -> None:
    """What the workers do, in the order the tasks are sent."""
    for query in advice.queries.all():
        services.work_out_query(query_id=query.pk)
    for run in AdviceRun.objects.filter(query__request=advice):
        services.execute_run(run_id=run.pk)


def test_trna_phe_gives_its_family_the_known_structure_the_ranking_and_three_drawn_runs(client, benchmark):
    response = client.post(reverse("advice"), {"sequences": f">yeast tRNA-Phe\n{TRNA_PHE}\n"})
    assert response.status_code == 302
    advice = AdviceRequest.objects.get()
    assert response["Location"] == reverse("advice-result", args=[advice.token])
    assert len(advice.token) >= 32
    page = client.get(response["Location"]).content.decode()
    assert 'http-equiv="refresh"' in page and "Working" in page

    _work_out(advice)
    query = AdviceQuery.objects.get()
    evidence = query.evidence
    assert evidence["family"]["found"] and evidence["family"]["accession"] == "RF00005"
    assert evidence["family"]["label"] == "tRNA"
    assert evidence["similar"][0]["target"] == benchmark["target"].pk
    assert evidence["similar"][0]["identity"] == 1.0
    assert evidence["slice_kind"] == "family"
    assert [r["method"] for r in evidence["slices"][0]["rows"]][:3] == list(TOP)
    sentence = "1 tRNA target in 1 dataset (provisional); the top 3 are not separable at this n."
    assert evidence["sentence"] == sentence
    runs = list(query.runs.select_related("method"))
    assert [r.method.name for r in runs] == list(TOP)
    assert all(r.status == Status.DONE and r.result["ok"] for r in runs), [r.result for r in runs]
    advice.refresh_from_db()
    assert advice.status == Status.DONE

    page = client.get(reverse("advice-result", args=[advice.token]))
    assert page["Cache-Control"].count("no-store") == 1
    html = page.content.decode()
    assert 'http-equiv="refresh"' not in html
    assert "tRNA (Rfam RF00005" in html
    assert reverse("target-detail", args=[benchmark["target"].pk]) in html
    assert "Agreement between the predictions" in html and "Consensus" in html
    for run in runs:
        svg = client.get(reverse("advice-drawing", args=[advice.token, 0, run.pk]))
        assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
        assert svg.content.decode().count(' data-i="') == len(run.result["pairs"])  # one line per pair
        bpseq = client.get(reverse("advice-download", args=[advice.token, 0, run.pk, "bpseq"]))
        sequence, structure = read_bpseq(bpseq.content.decode())
        assert sequence == TRNA_PHE and sorted(structure.pairs) == sorted(map(tuple, run.result["pairs"]))
    # RNAfold's MFE structure of tRNA-Phe is a cloverleaf-like fold with ~20 pairs, not an empty one
    assert 15 <= len(runs[0].result["pairs"]) <= 30
    # base-pair probabilities where a method gives them (RNAfold-MEA: its partition function), none elsewhere
    mea = next(r for r in runs if r.method.name == "RNAfold-MEA")
    assert "probabilities" not in runs[0].result and "probabilities" not in runs[1].result
    kept = mea.result["probabilities"]
    assert 0 < len(kept) <= min(mea.result["n_probabilities"], services.KEEP_PROBABILITIES)
    assert all(1 <= i < j <= len(TRNA_PHE) and 0.01 <= p <= 1 for i, j, p in kept)
    assert html.count('class="pairing-profile"') == 1 and 'data-method="RNAfold-MEA"' in html
    data = {r["method"]: r for r in pages.query_data(query)["runs"]}
    profile = data["RNAfold-MEA"]["profile"]
    assert data["RNAfold-MFE"]["profile"] is None and len(profile["paired"]) == len(TRNA_PHE)
    assert all(0 <= x <= 1 for x in profile["paired"])
    assert profile["pairs_mean"] > 0.5  # the MEA structure is made of its likely pairs
    paired_in_mea = {k for pair in mea.result["pairs"] for k in pair}
    assert min(profile["paired"][k - 1] for k in paired_in_mea) > max(
        profile["paired"][k - 1] for k in set(range(1, len(TRNA_PHE) + 1)) - paired_in_mea) - 0.5
    url = reverse("advice-download", args=[advice.token, 0, mea.pk, "json"])
    download = json.loads(client.get(url).content)
    assert download["probabilities"] == kept and download["pairs"] == mea.result["pairs"]


def test_a_fasta_of_three_gives_three_answers_and_the_api_reads_them(client, benchmark):
    text = f">one\n{TRNA_PHE}\n>two\n{TRNA_PHE[:40]}\n>three\nGGGGAAAACCCCAAAAGGGGAAAACCCC\n"
    response = client.post(reverse("api-advice"), data=json.dumps({"sequences": text}),
                           content_type="application/json")
    assert response.status_code == 202, response.content
    body = response.json()
    advice = AdviceRequest.objects.get(token=body["token"])
    assert [q.name for q in advice.queries.all()] == ["one", "two", "three"]
    _work_out(advice)
    got = client.get(reverse("api-advice-detail", args=[body["token"]])).json()
    assert [q["name"] for q in got["queries"]] == ["one", "two", "three"]
    assert all(q["status"] == "done" for q in got["queries"])
    assert got["queries"][0]["evidence"]["family"]["label"] == "tRNA"
    assert got["queries"][2]["evidence"]["slice_kind"] == "length"  # no family: its length bin
    finished = [r for q in got["queries"] for r in q["runs"] if r["status"] == "done"]
    assert finished and all(isinstance(r["pairs"], list) for r in finished)
    page = client.get(reverse("advice-result", args=[body["token"]])).content.decode()
    assert page.count('class="advice-query"') == 3


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("ACGUXACGUACGU", "is not a nucleotide"),
        ("A" * 1001, "has 1001 nt; at most 1000"),
        ("", "the input is empty"),
        ("ACGU" * 262_144, "at most 20,000 are accepted"),
    ],
)
def test_bad_inputs_get_their_error_and_queue_nothing(client, benchmark, text, words):
    page = client.post(reverse("advice"), {"sequences": text})
    assert page.status_code == 400
    assert words in page.content.decode()
    api = client.post(reverse("api-advice"), data=json.dumps({"sequences": text}),
                      content_type="application/json")
    assert api.status_code == 400 and words in api.json()["error"]
    assert not AdviceRequest.objects.exists() and not AdviceQuery.objects.exists()


@override_settings(ADVICE_PER_ADDRESS=2)
def test_one_address_is_limited_and_told_to_come_back(client, benchmark):
    for _ in range(2):
        assert client.post(reverse("advice"), {"sequences": TRNA_PHE}).status_code == 302
    page = client.post(reverse("advice"), {"sequences": TRNA_PHE})
    assert page.status_code == 429 and "At most 2 requests per 60 minutes" in page.content.decode()
    assert AdviceRequest.objects.count() == 2
    other = client.post(reverse("advice"), {"sequences": TRNA_PHE}, REMOTE_ADDR="192.0.2.7")
    assert other.status_code == 302  # another address is not held up


@override_settings(ADVICE_MAX_OPEN_RUNS=3)
def test_the_queue_cap_answers_busy_with_minutes(client, benchmark):
    assert client.post(reverse("advice"), {"sequences": TRNA_PHE}).status_code == 302
    services.work_out_query(query_id=AdviceQuery.objects.get().pk)  # three runs queued, none run
    assert AdviceRun.objects.filter(status=Status.QUEUED).count() == 3
    page = client.post(reverse("advice"), {"sequences": TRNA_PHE})
    assert page.status_code == 429
    assert "The advisor is busy (3 runs waiting); try again in about 2 minutes" in page.content.decode()
    assert AdviceRequest.objects.count() == 1


def test_results_expire_after_seven_days_by_the_project_clock(client, benchmark, settings):
    client.post(reverse("advice"), {"sequences": TRNA_PHE})
    advice = AdviceRequest.objects.get()
    url = reverse("advice-result", args=[advice.token])
    assert client.get(url).status_code == 200
    later = clock.now() + timedelta(days=7, minutes=1)
    settings.CLOCK = f"{later:%Y-%m-%dT%H:%M:%S}Z@{time.time():.1f}"
    assert client.get(url).status_code == 404
    assert client.get(reverse("api-advice-detail", args=[advice.token])).status_code == 404
    assert services.delete_expired_advice() == 1
    assert not AdviceQuery.objects.exists()


def test_only_methods_run_in_the_sandbox_can_be_ticked(client, benchmark):
    web = Method.objects.get(name="CONTRAfold-MFE")
    version = web.current_version
    version.spec = version.spec | {"kind": "web", "endpoint": "https://fold.example.org/x"}
    version.save(update_fields=["spec"])
    page = client.post(reverse("advice"), {"sequences": TRNA_PHE, "methods": [str(web.pk)]})
    assert page.status_code == 400
    assert f"Method {web.pk} cannot be run by the advisor" in page.content.decode()
    assert web.name not in client.get(reverse("advice")).content.decode()


def test_the_schema_lists_the_endpoint(client):
    schema = client.get(reverse("api-schema"), HTTP_ACCEPT="application/json").content.decode()
    assert "/api/advice/" in schema and "/api/advice/{token}/" in schema


def test_a_body_that_is_not_json_is_answered_in_the_documented_shape(client):
    bad = client.post(reverse("api-advice"), data=b"\x00", content_type="application/json")
    assert bad.status_code == 400 and "JSON parse error" in bad.json()["error"]
    odd = client.post(reverse("api-advice"), data=b"x", content_type="text/csv")
    assert odd.status_code == 415 and set(odd.json()) == {"error"}
    assert client.delete(reverse("api-advice")).json().keys() == {"error"}


def test_a_bad_method_id_in_a_form_body_is_named(client):
    bad = client.post(reverse("api-advice"), {"sequences": "ACGUACGUACGU", "methods": ["2", "0"]})
    assert bad.status_code == 400
    assert bad.json()["error"] == "methods.1: Ensure this value is greater than or equal to 1."


def test_odd_method_ids_in_the_form_are_ignored_not_a_500(client, benchmark):
    page = client.post(reverse("advice"), {"sequences": "ACGUAC", "methods": ["²", "9" * 40, "-1"]})
    assert page.status_code == 400 and "at least 10" in page.content.decode()


def test_runs_and_sequences_no_worker_will_finish_are_swept_to_failed(client, benchmark, settings):
    """A worker killed after the broker dropped its task leaves a run "running": the periodic sweep records
    it as failed after 20 minutes, and anything still waiting after 3 hours, so the page finishes."""
    assert client.post(reverse("advice"), {"sequences": TRNA_PHE}).status_code == 302
    advice = AdviceRequest.objects.get()
    services.work_out_query(query_id=AdviceQuery.objects.get().pk)
    taken = AdviceRun.objects.order_by("pk").first()
    AdviceRun.objects.filter(pk=taken.pk).update(status=Status.RUNNING, started_at=clock.now())
    assert services.sweep_stuck_advice() == {"runs": 0, "queries": 0}  # nothing is old yet

    def at(delta):
        later = clock.now() + delta
        settings.CLOCK = f"{later:%Y-%m-%dT%H:%M:%S}Z@{time.time():.1f}"

    at(timedelta(minutes=21))
    assert services.sweep_stuck_advice() == {"runs": 1, "queries": 0}
    taken.refresh_from_db()
    assert taken.status == Status.FAILED and "worker running it stopped" in taken.result["message"]
    assert AdviceRun.objects.filter(status=Status.QUEUED).count() == 2  # still waiting their turn
    api = client.get(reverse("api-advice-detail", args=[advice.token])).json()
    assert api["pending"]
    at(timedelta(hours=3, minutes=2))
    assert services.sweep_stuck_advice() == {"runs": 2, "queries": 0}
    advice.refresh_from_db()
    assert advice.status == Status.DONE and advice.finished_at is not None
    api = client.get(reverse("api-advice-detail", args=[advice.token])).json()
    assert not api["pending"] and api["progress"]["runs_done"] == api["progress"]["runs"] == 3
    assert services.sweep_stuck_advice() == {"runs": 0, "queries": 0}


def test_a_family_slice_where_nothing_is_ranked_still_runs_its_top_three(client, benchmark):
    """One family: the floor makes every verdict "?", no method is "ranked". The runs are then the slice's
    first three in its order (ranked ones first had there been any), not none (make run, issue 40)."""
    assert client.post(reverse("advice"), {"sequences": TRNA_PHE}).status_code == 302
    query = AdviceQuery.objects.get()
    services.work_out_query(query_id=query.pk)
    query.refresh_from_db()
    rows = query.evidence["slices"][0]["rows"]
    names = [r["method"] for r in rows]
    for row in rows:
        row["ranked"] = False
    assert [run.method.name for run in services.choose_runs(query)] == names[:3]
    rows[2]["ranked"] = True  # a ranked method comes before the unranked ones
    assert [run.method.name for run in services.choose_runs(query)] == [names[2], names[0], names[1]]


def test_a_ranking_refreshed_a_moment_ago_without_its_summary_still_gives_the_rows(client, benchmark):
    """The background stores each new snapshot's summary a little later; meanwhile the evidence reads the
    report's own methods (it read a key no report has, so the advisor ran nothing in make run)."""
    from comparna.models import RankingSnapshotSummary

    RankingSnapshotSummary.objects.all().delete()
    assert client.post(reverse("advice"), {"sequences": TRNA_PHE}).status_code == 302
    query = AdviceQuery.objects.get()
    services.work_out_query(query_id=query.pk)
    query.refresh_from_db()
    assert [r["method"] for r in query.evidence["slices"][0]["rows"]][:3] == list(TOP)
    assert [run.method.name for run in query.runs.order_by("order")] == list(TOP)


def test_with_nothing_ranked_on_its_slice_the_leaders_of_all_rnas_run_and_the_page_says_so(client, benchmark):
    """Early in a backlog no ranking of 201–800 nt had a result (make run, 30 min): the advisor ran nothing.
    Now it takes the methods leading the all-RNA rankings, and its sentence says so."""
    from comparna.models import RankingSnapshot, RankingSnapshotSummary, Subset

    dataset = benchmark["subset"].dataset
    everything, _ = Subset.objects.get_or_create(dataset=dataset, slug="all", defaults={"name": "All"})
    everything.targets.add(benchmark["target"])
    rows = [{"method": name, "rank": k + 1, "ranked": True, "rank_low": 1, "rank_high": 3, "decided_mcc": 0.7,
             "decided_targets": 12, "mcc": 0.7, "targets": 12}
            for k, name in enumerate(["CONTRAfold-MFE", "RNAfold-MFE", "LinearFold-V"])]
    snap = RankingSnapshot.objects.create(
        dataset=dataset, subset=everything, definition=dataset.definitions[0], seed=1, inputs_hash="a" * 64,
        inputs={}, report={"protocol": "target", "clusters": 3, "methods": rows},
    )
    RankingSnapshotSummary.objects.create(snapshot=snap, protocol="target", clusters=3, methods=rows)
    unknown = "ACGUUAGCCAUGGCAUACGGAUCCGAUGCAUCGGAUCGAUCGGCUAGCUAGGCAUCGAUCGAUGCAUGCAUGCGGCAU"  # no family
    assert client.post(reverse("advice"), {"sequences": unknown}).status_code == 302
    query = AdviceQuery.objects.get()
    services.work_out_query(query_id=query.pk)
    query.refresh_from_db()
    assert not query.evidence["family"]["found"]
    assert query.evidence["slice_kind"] == "all"
    assert query.evidence["sentence"].startswith("No ranking of targets of ≤ 200 nt has results yet")
    assert [run.method.name for run in query.runs.order_by("order")] == [r["method"] for r in rows]
    page = client.get(reverse("advice-result", args=[query.request.token])).content.decode()
    assert "lead the rankings of all RNAs instead" in page
