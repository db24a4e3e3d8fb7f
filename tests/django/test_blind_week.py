"""One blind week through the services (no Celery): the Saturday files from a local wwPDB, real predictions
(ViennaRNA), freezing, the commitment at the deadline, a late prediction, tampering found by verification,
the Wednesday release polled from a local RCSB, links, closures, scores and rankings."""

from __future__ import annotations

import datetime as dt
import time

import pytest
import RNA
from django.core.management import call_command

from comparna.blind import freezing, prerelease, rankings, release
from comparna.blind.models import (
    BlindRanking,
    BlindScore,
    BlindTarget,
    BlindWeek,
    FrozenPrediction,
    PrereleaseRun,
)
from comparna.blind.scoring import score_unscored
from comparna.models import Target
from comparna.rna.canonical import structure_to_text
from comparna.rna.formats import parse_dot_bracket
from ingest.models import PdbEntry
from ingest.pdb import prerelease as pr
from ingest.services.pdb import poll_pdb, rcsb_client
from predictors.models import Prediction
from tests.factories import make_method_version
from tests.support.local_rcsb import FIXTURE_FILES, LocalEntry, LocalRcsb
from tests.support.local_wwpdb import SAMPLES, LocalWwpdb

pytestmark = pytest.mark.django_db

UTC = dt.UTC
RELEASE = dt.date(2024, 1, 10)
SAT = dt.datetime(2024, 1, 6, 3, 0, tzinfo=UTC)
DEADLINE = dt.datetime(2024, 1, 9, 22, 0, tzinfo=UTC)

SAMPLE = {
    f"{p.pdb_id}_{p.entity_id}": p
    for p in pr.parse_files(
        (SAMPLES / pr.SEQUENCE_FILE).read_text(), (SAMPLES / pr.CANONICAL_FILE).read_text()
    )
}


def week_files(rows: list[tuple[str, str, str]]) -> tuple[str, str]:
    """(plain, canonical) file texts for (new id, entity, sample key) rows: real sequences under new ids."""
    plain = ["PDB_ID\tEntity_ID\tSequence"]
    canonical = []
    for pdb_id, entity, key in rows:
        plain.append(f"{pdb_id}\t{entity}\t{SAMPLE[key].sequence}")
        canonical.append(f"{pdb_id}\t{entity}\t{SAMPLE[key].canonical}")
    return "\n".join(plain) + "\n", "\n".join(canonical) + "\n"


def observed(mmcif_dir, name: str, chain: str) -> str:
    """A real RNA not in the sample files: a fixture file's chain as observed (those files have no
    _entity_poly)."""
    import gemmi

    st = gemmi.read_structure(str(mmcif_dir / name))
    st.setup_entities()
    return gemmi.one_letter_code([r.name for r in st[0][chain].get_polymer()]).upper()


ROWS = [
    ("9GID", "1", "1GID_1"),   # P4-P6 domain: target, released with two copies (A, B)
    ("9BTK", "2", "8BTK_2"),   # target, released as entity 2 (chain B7)
    ("9QLN", "1", "4QLN_1"),   # target; released chain has backbone breaks: closed
    ("9EHZ", "1", "1EHZ_1"),   # the backfilled tRNA again (modified residues): not novel
    ("9HY9", "1", "2HY9_1"),   # DNA
    ("9FCZ", "1", "1FCZ_1"),   # protein
    ("9SRT", "1", "1A1T_1"),   # 20 nt: too short
]


@pytest.fixture
def servers(mmcif_dir, settings, tmp_path):
    now = [SAT - dt.timedelta(hours=1)]

    def entry(pdb_id, release_day, name):
        return LocalEntry(pdb_id, release_day, mmcif_dir / FIXTURE_FILES[name])

    entries = [
        entry("1EHZ", dt.date(2023, 12, 6), "1EHZ"),  # backfill: the novelty reference set
        entry("9GID", RELEASE, "1GID"),
        entry("9BTK", RELEASE, "8BTK"),
        entry("9QLN", RELEASE, "4QLN"),
    ]
    with LocalRcsb(entries, clock=lambda: now[0]) as rcsb, LocalWwpdb(clock=lambda: now[0]) as wwpdb:
        rcsb.holdings["9WDR"] = ("UNRELEASED", "WDRN")
        rcsb.holdings["9HLD"] = ("UNRELEASED", "HPUB")
        settings.RCSB_SEARCH_URL = rcsb.search_url
        settings.RCSB_DOWNLOAD_URL = rcsb.download_url
        settings.RCSB_DATA_URL = rcsb.data_url
        settings.WWPDB_FILES_URL = wwpdb.base_url
        settings.RCSB_RETRIES = 1
        settings.RCSB_TIMEOUT_S = 10
        settings.PDB_DOWNLOAD_DIR = tmp_path / "pdb"
        settings.PDB_BENCHMARK_START = dt.date(2024, 1, 1)
        poll_pdb(since=dt.date(2023, 11, 1), until=dt.date(2023, 12, 31), client=rcsb_client())
        yield now, rcsb, wwpdb


def predict(version, target: Target, *, finished: dt.datetime) -> Prediction:
    structure = parse_dot_bracket(RNA.fold(target.sequence)[0], length=target.length)
    return Prediction.objects.create(
        method_version=version, target=target, status=Prediction.Status.OK,
        pairs=structure_to_text(structure), finished_at=finished,
    )


def test_saturday_files_late_partial_then_imported_once(servers):
    now, rcsb, wwpdb = servers
    last_week = SAT - dt.timedelta(days=7)
    old_plain, old_canonical = week_files([("8OLD", "1", "1GID_1")])
    wwpdb.publish(pr.SEQUENCE_FILE, old_plain, at=last_week)
    wwpdb.publish(pr.CANONICAL_FILE, old_canonical, at=last_week)

    assert prerelease.poll_prerelease(now=now[0]).run is None  # Saturday 02:00: nothing due yet
    now[0] = SAT + dt.timedelta(minutes=30)
    result = prerelease.poll_prerelease(now=now[0])  # the file is still last week's
    assert result.retry and result.run.outcome == PrereleaseRun.Outcome.STALE
    assert "before this week's publication" in result.run.error
    assert prerelease.poll_prerelease(now=now[0] + dt.timedelta(minutes=5)).run is None  # backoff
    week = BlindWeek.objects.get(release_date=RELEASE)
    assert week.next_attempt_at == now[0] + dt.timedelta(seconds=600)

    plain, canonical = week_files(ROWS + [("9WDR", "1", "6RS3_1")])
    cut = plain[: plain.index("9QLN") + 12]  # written half-way through a line
    wwpdb.publish(pr.SEQUENCE_FILE, cut, at=SAT + dt.timedelta(minutes=40))
    wwpdb.publish(pr.CANONICAL_FILE, canonical, at=SAT + dt.timedelta(minutes=40))
    now[0] = SAT + dt.timedelta(hours=1)
    result = prerelease.poll_prerelease(now=now[0])
    assert result.run.outcome == PrereleaseRun.Outcome.MALFORMED and "is not terminated" in result.run.error
    assert not Target.objects.filter(dataset__slug=prerelease.BLIND_SLUG).exists()  # nothing changed

    wwpdb.publish(pr.SEQUENCE_FILE, plain, at=SAT + dt.timedelta(hours=2))
    now[0] = SAT + dt.timedelta(hours=3)
    result = prerelease.poll_prerelease(now=now[0])
    assert result.run.outcome == PrereleaseRun.Outcome.IMPORTED and not result.retry
    week.refresh_from_db()
    assert week.status == BlindWeek.Status.OPEN and week.runs.count() == 3
    assert sorted(week.targets.values_list("pdb_id", flat=True)) == ["9BTK", "9GID", "9QLN"]
    reasons = {row["polymer"]: row["reason"] for row in week.summary["skipped"]}
    assert reasons == {
        "9EHZ_1": "similar to a known chain (1EHZ_A)", "9HY9_1": "DNA", "9FCZ_1": "protein",
        "9SRT_1": "too short: 20 nt (must be > 20)", "9WDR_1": "DNA",
    }
    gid = Target.objects.get(source_id="9GID_1")
    assert gid.sequence == SAMPLE["1GID_1"].canonical and gid.length == 158
    assert gid.blind.entity_id == "1" and week.files[pr.SEQUENCE_FILE]["sha256"]
    # idempotent per week
    assert prerelease.poll_prerelease(now=now[0] + dt.timedelta(hours=1)).run is None
    assert week.runs.count() == 3 and week.targets.count() == 3


def test_full_week_commit_verify_release_scores_and_rankings(servers, capsys, mmcif_dir):
    now, rcsb, wwpdb = servers
    plain, canonical = week_files(ROWS)
    # two more real RNAs, announced but never released: 6G90's chain up to its unknown residues (withdrawn),
    # 1A4D's chain A (held)
    withdrawn = observed(mmcif_dir, "6g90_1.cif", "1").split("N")[0]
    for pdb_id, sequence in (("9WDR", withdrawn), ("9HLD", observed(mmcif_dir, "1A4D_1_A-B.cif", "A"))):
        plain += f"{pdb_id}\t1\t{sequence}\n"
        canonical += f"{pdb_id}\t1\t{sequence}\n"
    wwpdb.publish(pr.SEQUENCE_FILE, plain, at=SAT)
    wwpdb.publish(pr.CANONICAL_FILE, canonical, at=SAT)
    now[0] = SAT + dt.timedelta(minutes=30)
    assert prerelease.poll_prerelease(now=now[0]).run.outcome == PrereleaseRun.Outcome.IMPORTED
    week = BlindWeek.objects.get(release_date=RELEASE)
    blind = {b.pdb_id: b for b in week.targets.select_related("target")}
    assert sorted(blind) == ["9BTK", "9GID", "9HLD", "9QLN", "9WDR"]

    fold, other = make_method_version("BlindFoldA"), make_method_version("BlindFoldB")
    sunday = SAT + dt.timedelta(days=1)
    for b in blind.values():
        predict(fold, b.target, finished=sunday)
    on_time = predict(other, blind["9GID"].target, finished=sunday)
    assert freezing.freeze_predictions(now=sunday) == 6
    assert not freezing.commit_week(week, now=DEADLINE - dt.timedelta(minutes=1))  # not yet due
    late = predict(other, blind["9BTK"].target, finished=DEADLINE + dt.timedelta(minutes=5))
    assert freezing.commit_week(week, now=DEADLINE + dt.timedelta(minutes=10))
    week.refresh_from_db()
    assert week.status == BlindWeek.Status.COMMITTED and week.blind
    lines = freezing.parse_commitment(week.commitment)
    assert len(lines) == 6 and {r["method"] for r in lines} == {"BlindFoldA", "BlindFoldB"}
    assert freezing.sha256_text(week.commitment) == week.commitment_sha256
    frozen_late = FrozenPrediction.objects.get(prediction=late)
    assert frozen_late.late and not frozen_late.committed
    assert freezing.verify_week(week).ok

    # someone changes a stored blind prediction after the commitment: verification finds it
    Prediction.objects.filter(pk=on_time.pk).update(pairs="1-158")
    report = freezing.verify_week(week)
    assert not report.ok and report.matching == 5
    assert report.problems == [
        {"prediction": str(on_time.pk), "target": "9GID_1", "method": "BlindFoldB", "what": "changed",
         "detail": "changed after the commitment: pairs", "fields": ["pairs"]}
    ]
    with pytest.raises(SystemExit) as failed:
        call_command("verify_blind", "--week", str(RELEASE))
    assert failed.value.code == 1
    out = capsys.readouterr().out
    assert f"prediction {on_time.pk}" in out and "changed after the commitment: pairs" in out

    # Wednesday: the release; Thursday: the weekly poll, then the links
    now[0] = dt.datetime(2024, 1, 11, 6, tzinfo=UTC)
    assert release.link_released(now=now[0])["waiting"] == 5  # not polled yet: every target waits
    poll_pdb(since=dt.date(2024, 1, 1), until=now[0].date(), client=rcsb_client())
    assert set(PdbEntry.objects.values_list("pdb_id", flat=True)) >= {"9GID", "9BTK", "9QLN"}
    counts = release.link_released(now=now[0])
    assert counts == {"scored": 2, "closed": 2, "held": 1, "waiting": 0}
    states = {b.pdb_id: (b.state, b.reason) for b in BlindTarget.objects.all()}
    assert states["9GID"] == (BlindTarget.State.SCORED, "")
    assert states["9BTK"] == (BlindTarget.State.SCORED, "")
    assert states["9QLN"][0] == BlindTarget.State.CLOSED and "backbone breaks" in states["9QLN"][1]
    withdrawn = "withdrawn before release (unreleased (WDRN: withdrawn))"
    assert states["9WDR"] == (BlindTarget.State.CLOSED, withdrawn)
    assert states["9HLD"][0] == BlindTarget.State.HELD and "HPUB" in states["9HLD"][1]
    gid = BlindTarget.objects.get(pdb_id="9GID")
    assert gid.chain_id == "A" and gid.identity == 1.0 and gid.window == [[1, 158]]
    assert [c["chain"] for c in gid.chains if c["linked"]] == ["A", "B"]
    btk = BlindTarget.objects.get(pdb_id="9BTK")
    assert btk.chain_id == "B7" and btk.reference["linked_by"] == "entity"

    # scores come from the committed content (the tampered row changes nothing); late ones are scored apart
    tampered = BlindScore.objects.get(frozen__prediction=on_time, definition="standard")
    assert tampered.values["tp"] > 0
    assert BlindScore.objects.filter(frozen__late=True).count() == 2  # the late one on 9BTK, two definitions
    after = predict(make_method_version("BlindFoldC"), blind["9GID"].target, finished=now[0])
    assert freezing.freeze_predictions(now=now[0]) == 1
    assert score_unscored() == 1 and BlindScore.objects.filter(frozen__late=True).count() == 4
    assert FrozenPrediction.objects.get(prediction=after).late

    ranked = rankings.rank_blind()
    scopes = {(r.scope, r.definition) for r, _ in ranked}
    assert scopes == {(str(RELEASE), "standard"), (str(RELEASE), "extended"),
                      ("cumulative", "standard"), ("cumulative", "extended")}
    week_rank = BlindRanking.objects.get(scope=str(RELEASE), definition="standard")
    assert week_rank.inputs["targets"] == 2
    assert set(week_rank.inputs["methods"]) == {"BlindFoldA", "BlindFoldB"}
    methods = {row["method"] for row in week_rank.report["methods"]}
    assert methods == {"BlindFoldA", "BlindFoldB"}
    cumulative = BlindRanking.objects.get(scope="cumulative", definition="standard")
    assert "sequential" in cumulative.report
    assert all(not new for _, new in rankings.rank_blind())  # same inputs: no new ranking

    # a month later the held entry is still held: closed
    later = dt.datetime(2024, 2, 15, tzinfo=UTC)
    now[0] = later
    assert release.link_released(now=later)["closed"] == 1
    assert "still not released 28 days" in BlindTarget.objects.get(pdb_id="9HLD").reason
    assert BlindWeek.objects.get(pk=week.pk).status == BlindWeek.Status.DONE


def committed_week(settings, when: dt.datetime):
    """A week with one target and two predictions, committed at its deadline (no HTTP, no CD-HIT)."""
    settings.CLOCK = f"{when:%Y-%m-%dT%H:%M:%S}Z@{time.time():.3f}x1"
    week = prerelease.ensure_week(RELEASE)
    week.status = BlindWeek.Status.OPEN
    week.save()
    dataset = prerelease.ensure_blind_dataset()
    sequence = SAMPLE["1GID_1"].canonical
    target = Target.objects.create(
        dataset=dataset, source_id="9GID_1", sequence=sequence, length=len(sequence)
    )
    BlindTarget.objects.create(week=week, target=target, pdb_id="9GID", entity_id="1", announced=sequence)
    a = predict(make_method_version("BlindFoldA"), target, finished=SAT + dt.timedelta(days=1))
    b = predict(make_method_version("BlindFoldB"), target, finished=SAT + dt.timedelta(days=1))
    return week, target, a, b


def test_pages_hide_predictions_until_the_release_and_show_verification(settings, client):
    import hashlib
    import json

    week, target, a, b = committed_week(settings, DEADLINE - dt.timedelta(hours=1))
    page = client.get(f"/targets/{target.pk}/")
    assert page.status_code == 200 and "hidden until the PDB releases the structure" in page.content.decode()
    assert "BlindFoldA" not in page.content.decode()
    api = client.get("/api/predictions/", {"dataset": prerelease.BLIND_SLUG}).json()
    assert api["results"] == [] and client.get(f"/api/predictions/{a.pk}/").status_code == 404
    assert client.get(f"/blind/{RELEASE}/commitment.tsv").status_code == 404  # not committed yet
    assert client.get(f"/blind/{RELEASE}/predictions.json").status_code == 404
    awaiting = client.get("/blind/awaiting/").content.decode()
    assert "9GID_1" in awaiting and "Nothing awaits" not in awaiting

    settings.CLOCK = f"{DEADLINE + dt.timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}Z@{time.time():.3f}x1"
    freezing.freeze_predictions()
    assert freezing.commit_week(week)
    week.refresh_from_db()
    tsv = client.get(f"/blind/{RELEASE}/commitment.tsv")
    assert tsv.status_code == 200 and hashlib.sha256(tsv.content).hexdigest() == week.commitment_sha256
    assert tsv["X-Content-SHA256"] == week.commitment_sha256
    html = client.get(f"/blind/{RELEASE}/").content.decode()
    assert week.commitment_sha256 in html and 'data-ok="true"' in html
    assert client.get(f"/blind/{RELEASE}/predictions.json").status_code == 404  # still before the release

    settings.CLOCK = f"{RELEASE + dt.timedelta(days=1):%Y-%m-%d}T00:00:00Z@{time.time():.3f}x1"
    published = client.get(f"/blind/{RELEASE}/predictions.json").json()
    lines = {row["prediction"]: row["sha256"] for row in freezing.parse_commitment(tsv.content.decode())}
    for row in published["predictions"]:  # anyone can recompute every committed hash
        text = json.dumps(row["content"], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        assert hashlib.sha256(text.encode()).hexdigest() == lines[str(row["prediction"])]
    assert len(client.get("/api/predictions/", {"dataset": prerelease.BLIND_SLUG}).json()["results"]) == 2
    assert "BlindFoldA" in client.get(f"/targets/{target.pk}/").content.decode()

    Prediction.objects.filter(pk=b.pk).update(pairs="")  # changed after the commitment
    html = client.get(f"/blind/{RELEASE}/").content.decode()
    assert 'data-ok="false"' in html and "Verification failed" in html
    row = f"<td>{b.pk}</td><td>BlindFoldB</td><td>9GID_1</td><td>changed after the commitment: pairs</td>"
    assert row in html
    for url in ("/blind/", "/blind/awaiting/", f"/blind/{RELEASE}/?definition=extended"):
        assert client.get(url).status_code == 200
    assert client.get("/blind/2024-02-30/").status_code == 404  # not a date
    assert client.get("/blind/2024-02-28/").status_code == 404  # no such week
