"""The RCSB client against a real HTTP server on loopback (tests/support/local_rcsb.py), with faults."""

from __future__ import annotations

import gzip
import math
from datetime import date
from pathlib import Path

import pytest

from ingest.pdb import pipeline
from ingest.pdb.rcsb import DownloadFailed, EntryGone, RcsbClient, SearchFailed, rna_release_query
from tests.support.local_rcsb import ALWAYS, LocalRcsb, fixture_entries

WINDOW = (date(2024, 1, 1), date(2024, 1, 31))


@pytest.fixture(scope="module")
def entries(mmcif_dir):
    return fixture_entries(mmcif_dir)


@pytest.fixture
def server(entries):
    with LocalRcsb(entries) as srv:
        yield srv


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def client(server, sleeps):
    return RcsbClient(server.search_url, server.download_url, timeout=0.3, retries=2, backoff=0.01,
                      page_size=3, sleep=sleeps.append)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".part") or p.name.startswith("."))


# -- search ------------------------------------------------------------------------------------------


def test_query_uses_the_search_api_v2_schema():
    query = rna_release_query(date(2024, 1, 3), date(2024, 1, 9), start=6, rows=3)
    nodes = {n["parameters"]["attribute"]: n["parameters"] for n in query["query"]["nodes"]}
    assert nodes["rcsb_entry_info.polymer_entity_count_RNA"] == {
        "attribute": "rcsb_entry_info.polymer_entity_count_RNA", "operator": "greater", "value": 0}
    assert nodes["rcsb_accession_info.initial_release_date"]["value"] == {
        "from": "2024-01-03", "to": "2024-01-09", "include_lower": True, "include_upper": True}
    assert query["request_options"]["paginate"] == {"start": 6, "rows": 3}
    assert query["return_type"] == "entry"


def test_search_follows_pagination_and_window(client, server, entries):
    result = client.search_rna_entries(date(2024, 1, 3), date(2024, 1, 17))
    inside = [e for e in entries if e.has_rna and date(2024, 1, 3) <= e.release <= date(2024, 1, 17)]
    expected = sorted(inside, key=lambda e: (e.release, e.pdb_id))
    assert list(result.identifiers) == [e.pdb_id for e in expected]
    assert len(expected) > 3  # several pages
    assert result.total_count == len(expected) and result.requests == math.ceil(len(expected) / 3)
    assert "184D" not in result.identifiers  # DNA-only entries are not RNA hits


def test_search_single_week_and_empty_window(client):
    week = client.search_rna_entries(date(2024, 1, 24), date(2024, 1, 30))
    assert week.identifiers == ("8BTK",)
    empty = client.search_rna_entries(date(2023, 1, 1), date(2023, 1, 7))  # HTTP 204
    assert empty.identifiers == () and empty.total_count == 0


def test_search_retries_server_errors(client, server, sleeps, entries):
    server.search_fail_500 = 2
    result = client.search_rna_entries(*WINDOW)
    assert set(result.identifiers) == {e.pdb_id for e in entries if e.has_rna} and sleeps == [0.01, 0.02]
    server.search_fail_500 = ALWAYS
    with pytest.raises(SearchFailed, match="HTTP 500"):
        client.search_rna_entries(*WINDOW)


# -- downloads ---------------------------------------------------------------------------------------


def test_download_is_verified_and_atomic(client, server, tmp_path, mmcif_dir):
    got = client.download("1ehz", tmp_path)
    assert got.path == tmp_path / "1EHZ.cif.gz" and got.attempts == 1
    assert gzip.decompress(got.path.read_bytes()) == (mmcif_dir / "1ehz-assembly-1.cif").read_bytes()
    assert got.size == got.path.stat().st_size and got.uncompressed_size > got.size
    assert leftovers(tmp_path) == []


def test_http_500_then_success(client, server, tmp_path, sleeps):
    server.fail_500["1A1T"] = 2
    got = client.download("1A1T", tmp_path)
    assert got.attempts == 3 and sleeps == [0.01, 0.02]  # exponential backoff
    assert server.hits("/download/1A1T") == 3


def test_http_500_exhausts_retries_and_keeps_previous_file(client, server, tmp_path):
    old = tmp_path / "1A1T.cif.gz"
    old.write_bytes(b"previous good copy")
    server.fail_500["1A1T"] = ALWAYS
    with pytest.raises(DownloadFailed) as info:
        client.download("1A1T", tmp_path)
    assert info.value.reason == "HTTP 500" and info.value.attempts == 3
    assert old.read_bytes() == b"previous good copy" and leftovers(tmp_path) == []


def test_timeout_is_retried(client, server, tmp_path):
    server.delay["1A1T"] = (1, 3.0)  # longer than the client's 0.3 s timeout, once
    outcome = pipeline.fetch_and_annotate(client, "1A1T", tmp_path)
    assert outcome.status == pipeline.OK and outcome.attempts == 2
    server.delay["1HMH"] = (ALWAYS, 3.0)
    outcome = pipeline.fetch_and_annotate(client, "1HMH", tmp_path)
    assert outcome.status == pipeline.DOWNLOAD_FAILED and "Timeout" in outcome.reason
    assert outcome.attempts == 3 and not (tmp_path / "1HMH.cif.gz").exists() and leftovers(tmp_path) == []


def test_truncated_gzip_is_retried_then_recorded(client, server, tmp_path):
    server.truncate["1A4D"] = 1
    assert client.download("1A4D", tmp_path).attempts == 2
    server.truncate["1E7K"] = ALWAYS
    outcome = pipeline.fetch_and_annotate(client, "1E7K", tmp_path)
    assert outcome.status == pipeline.DOWNLOAD_FAILED and "truncated gzip" in outcome.reason
    assert not (tmp_path / "1E7K.cif.gz").exists() and leftovers(tmp_path) == []


def test_connection_cut_short_of_content_length(client, server, tmp_path):
    server.cut["1GID"] = ALWAYS
    with pytest.raises(DownloadFailed) as info:
        client.download("1GID", tmp_path)
    assert info.value.attempts == 3
    assert not (tmp_path / "1GID.cif.gz").exists() and leftovers(tmp_path) == []
    server.cut["1GID"] = 1
    assert client.download("1GID", tmp_path).attempts == 2


def test_malformed_mmcif_is_recorded_unreadable(client, server, tmp_path):
    server.malformed.add("4QLN")
    outcome = pipeline.fetch_and_annotate(client, "4QLN", tmp_path)
    assert outcome.status == pipeline.UNREADABLE and "malformed" in outcome.reason
    assert outcome.annotation is None and list(tmp_path.iterdir()) == []


def test_entry_gone_between_search_and_download(client, server, tmp_path):
    server.gone.add("8BTK")
    assert "8BTK" in client.search_rna_entries(*WINDOW).identifiers
    with pytest.raises(EntryGone):
        client.download("8BTK", tmp_path)
    assert server.hits("/download/8BTK") == 1  # a 404 is not retried
    outcome = pipeline.fetch_and_annotate(client, "8BTK", tmp_path)
    assert outcome.status == pipeline.GONE and "404" in outcome.reason and list(tmp_path.iterdir()) == []


def test_weekly_poll_over_the_local_server(client, server, tmp_path):
    server.fail_500["1EHZ"] = 1
    server.gone.add("1HMH")
    week = client.search_rna_entries(date(2024, 1, 3), date(2024, 1, 9))
    outcomes = {pid: pipeline.fetch_and_annotate(client, pid, tmp_path) for pid in week.identifiers}
    assert set(outcomes) == {"1EHZ", "1DFU", "1GID"}
    assert all(o.status == pipeline.OK for o in outcomes.values())
    targets = [c for o in outcomes.values() for c in o.annotation.chains if c.excluded is None]
    assert sorted((c.chain, c.length) for c in targets) == [("A", 76), ("A", 158), ("B", 158)]
    assert all(c.standard_pairs for c in targets)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1DFU.cif.gz", "1EHZ.cif.gz", "1GID.cif.gz"]
