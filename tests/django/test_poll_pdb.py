"""The PDB poll against a real local HTTP RCSB serving the shared mmCIF files, with injected faults."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.test import Client

from comparna.models import Target
from ingest.models import PdbChain, PdbEntry, PollRun
from ingest.services.pdb import poll_pdb, rcsb_client
from tests.support.broker import recording_broker
from tests.support.local_rcsb import ALWAYS, FIXTURE_FILES, LocalEntry, LocalRcsb

pytestmark = pytest.mark.django_db

WED = dt.date(2024, 1, 3)


@pytest.fixture
def rcsb(mmcif_dir, settings, tmp_path):
    def entry(pdb_id, release, file_of=None):
        return LocalEntry(pdb_id, release, mmcif_dir / FIXTURE_FILES[file_of or pdb_id])

    entries = [
        entry("1EHZ", dt.date(2023, 12, 6)),             # backfill: novelty reference
        entry("1GID", WED),                               # two identical chains: one target, one copy
        entry("9EHZ", WED + dt.timedelta(7), "1EHZ"),     # same tRNA under a new id: not novel
        entry("8BTK", WED + dt.timedelta(7)),             # target, after one HTTP 500
        entry("2HY9", WED + dt.timedelta(7)),             # DNA: excluded with a reason
        entry("1JJP", WED + dt.timedelta(14)),            # listed, then 404 on download
        entry("4QLN", WED + dt.timedelta(14)),            # truncated gzip every time: download failed
        entry("6INQ", WED + dt.timedelta(14)),            # malformed mmCIF: unreadable
    ]
    with LocalRcsb(entries) as server:
        server.fail_500["8BTK"] = 1
        server.gone.add("1JJP")
        server.truncate["4QLN"] = ALWAYS
        server.malformed.add("6INQ")
        settings.RCSB_SEARCH_URL = server.search_url
        settings.RCSB_DOWNLOAD_URL = server.download_url
        settings.RCSB_RETRIES = 2
        settings.RCSB_TIMEOUT_S = 5
        settings.PDB_DOWNLOAD_DIR = tmp_path / "pdb"
        settings.PDB_BENCHMARK_START = dt.date(2024, 1, 1)
        yield server


def client():
    c = rcsb_client()
    c.sleep = lambda s: None  # backoff waits are not what this test measures
    return c


def test_backfill_then_weekly_poll_records_every_outcome(
    rcsb, settings, tmp_path, django_capture_on_commit_callbacks
):
    backfill = poll_pdb(since=dt.date(2023, 11, 1), until=dt.date(2023, 12, 31), client=client())
    assert backfill.backfill and backfill.status == PollRun.Status.DONE
    assert backfill.targets_created == 0
    assert PdbChain.objects.get(entry__pdb_id="1EHZ").role == PdbChain.Role.REFERENCE

    with recording_broker(tmp_path / "broker") as broker, django_capture_on_commit_callbacks(execute=True):
        run = poll_pdb(since=dt.date(2024, 1, 1), until=dt.date(2024, 1, 20), client=client())
    sent = broker.sent()
    assert run.status == PollRun.Status.DONE and not run.backfill
    assert (run.found, run.new, run.skipped) == (7, 7, 0)
    assert (run.done, run.total, run.percent) == (7, 7, 100)
    # The same pipeline as every source: predictions of every method, then families (comparna.pipeline).
    new_ids = sorted(Target.objects.filter(dataset__slug="pdb").values_list("pk", flat=True))
    assert sorted((m.task, m.args) for m in sent) == [
        ("ingest.tasks.assign_families_task", [new_ids]),
        ("predictors.tasks.queue_predictions_task", [new_ids, False]),
    ]
    assert run.failed == 3
    status = dict(PdbEntry.objects.values_list("pdb_id", "status"))
    assert status["1JJP"] == "gone" and status["4QLN"] == "download_failed" and status["6INQ"] == "unreadable"
    assert status["8BTK"] == "ok" and PdbEntry.objects.get(pdb_id="8BTK").attempts == 2
    assert PdbEntry.objects.get(pdb_id="4QLN").reason
    # Nothing half-written: only intact, readable downloads stay on disk.
    on_disk = sorted(p.name for p in settings.PDB_DOWNLOAD_DIR.iterdir())
    assert on_disk == sorted(f"{p}.cif.gz" for p, s in status.items() if s == "ok")

    targets = set(Target.objects.filter(dataset__slug="pdb").values_list("source_id", flat=True))
    assert targets == {"1GID_A", "8BTK_B7"}
    roles = {str(c): (c.role, c.reason) for c in PdbChain.objects.all()}
    assert roles["9EHZ_A"][0] == PdbChain.Role.SIMILAR
    assert PdbChain.objects.get(entry__pdb_id="9EHZ").similar_to.entry.pdb_id == "1EHZ"
    assert roles["1GID_B"][0] == PdbChain.Role.SIMILAR and "chain A" in roles["1GID_B"][1]
    assert roles["2HY9_1"][0] == PdbChain.Role.EXCLUDED and "DNA" in roles["2HY9_1"][1]

    gid = Target.objects.get(source_id="1GID_A")
    assert gid.release_date == WED and gid.length == 158
    std, ext = gid.references.get(definition="standard"), gid.references.get(definition="extended")
    assert 0 < std.n_pairs <= ext.n_pairs
    assert all(c[2] == "cWW" for c in std.classes)
    # the pairs chain A makes with chain B are recorded with the target, not in its reference
    other = gid.provenance["inter_chain_pairs"]
    assert len(other) == 5 and {(p["chain"], p["partner_chain"]) for p in other} == {("A", "B")}
    assert all(1 <= p["partner_i"] <= 158 and p["lw"] for p in other)
    assert "only the pairs between two residues of that chain" in gid.provenance["single_chain_rule"]
    assert gid.provenance["incomplete_bases"] == []
    page = Client().get(f"/targets/{gid.pk}/").content.decode()
    assert 'id="inter-chain-pairs"' in page and page.count("<td>B</td>") == 5
    assert "every base has all its ring atoms" in page and "Its reference structure holds only" in page
    api = Client().get(f"/api/targets/{gid.pk}/").json()
    assert api["inter_chain_pairs"] == other and api["incomplete_bases"] == [] and api["single_chain_rule"]
    assert set(gid.subsets.values_list("slug", flat=True)) >= {"all"}
    assert Target.objects.get(source_id="8BTK_B7").release_date == WED + dt.timedelta(7)

    # A second poll of the same window skips what is final and retries only the failed download.
    rcsb.truncate.pop("4QLN")
    again = poll_pdb(since=dt.date(2024, 1, 1), until=dt.date(2024, 1, 20), client=client())
    assert (again.found, again.new, again.skipped) == (7, 1, 6)
    assert PdbEntry.objects.get(pdb_id="4QLN").status == "ok"
    assert set(Target.objects.filter(dataset__slug="pdb").values_list("source_id", flat=True)) == targets


def test_poll_command_reports_and_search_failure_is_recorded(rcsb):
    call_command("poll_pdb", "--since", "2024-01-01", "--until", "2024-01-06", "--no-progress")
    assert Target.objects.filter(source_id="1GID_A").exists()
    rcsb.search_fail_500 = ALWAYS
    with pytest.raises(Exception, match="search failed"):
        call_command("poll_pdb", "--since", "2024-01-07", "--until", "2024-01-13", "--no-progress")
    failed = PollRun.objects.first()
    assert failed.status == PollRun.Status.FAILED and "search failed" in failed.error
