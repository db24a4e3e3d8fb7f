"""The pre-release reader, its HTTP client and the holdings client against local servers, and the clock."""

from __future__ import annotations

import datetime as dt

import pytest

from comparna.clock import ClockSettingError, parse_clock
from ingest.pdb import prerelease as pr
from ingest.pdb.holdings import CURRENT, UNKNOWN, UNRELEASED, HoldingsClient, HoldingsError
from tests.support.local_rcsb import LocalEntry, LocalRcsb
from tests.support.local_wwpdb import SAMPLES, LocalWwpdb

PLAIN = (SAMPLES / pr.SEQUENCE_FILE).read_text()
CANONICAL = (SAMPLES / pr.CANONICAL_FILE).read_text()
UTC = dt.UTC


def polymers() -> dict[str, pr.Polymer]:
    return {f"{p.pdb_id}_{p.entity_id}": p for p in pr.parse_files(PLAIN, CANONICAL)}


def test_sample_files_read_into_polymers_with_kinds_and_candidates():
    got = polymers()
    assert sorted(got) == ["1A1T_1", "1EHZ_1", "1FCZ_1", "1GID_1", "2HY9_1", "4QLN_1", "6RS3_1", "8BTK_2"]
    kinds = {k: p.kind for k, p in got.items()}
    assert kinds == {
        "1A1T_1": pr.RNA, "1EHZ_1": pr.RNA, "1FCZ_1": pr.PROTEIN, "1GID_1": pr.RNA, "2HY9_1": pr.DNA,
        "4QLN_1": pr.RNA, "6RS3_1": pr.DNA, "8BTK_2": pr.RNA,
    }
    tRNA = got["1EHZ_1"]
    assert tRNA.length == 76 == len(tRNA.canonical)
    assert (10, "2MG") in tRNA.modified and len(tRNA.modified) == 14
    reasons = {k: pr.rna_candidate(p) for k, p in got.items()}
    assert reasons["1GID_1"] == (got["1GID_1"].canonical, "") and len(got["1GID_1"].canonical) == 158
    assert reasons["1EHZ_1"][0] == tRNA.canonical  # modified residues count as their parent
    assert reasons["1A1T_1"] == (None, "too short: 20 nt (must be > 20)")
    assert reasons["1FCZ_1"] == (None, "protein")
    assert reasons["2HY9_1"] == (None, "DNA") == reasons["6RS3_1"]


def test_non_standard_letters_and_missing_canonical_file():
    plain = (
        "PDB_ID\tEntity_ID\tSequence\n9XYZ\t1\tGGGAAACCCUUUGGGAAACCCNNN\n"
        "9XYZ\t2\tGGGAAACCCUUUGGGAAA(PSU)CCC\n"
    )
    got = {p.entity_id: p for p in pr.parse_files(plain, None)}
    assert pr.rna_candidate(got["1"]) == (None, "non-standard nucleotides (N)")
    no_parents = "modified residues and no canonical file to name their parents"
    assert pr.rna_candidate(got["2"]) == (None, no_parents)
    hybrid = pr.parse_files("9XYZ\t1\tGGGAAACCCUUUGGGAAACCC(DA)(DT)\n", None)[0]
    assert pr.rna_candidate(hybrid) == (None, "RNA/DNA hybrid")


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no sequence lines"),
        ("PDB_ID\tEntity_ID\tSequence\n", "no sequence lines"),
        ("1ABC\t1\tGGGAAA\n1ABC\t2\tGGG", "line 2 is not terminated"),
        ("1ABC\t1\n", "line 1: expected 3 tab-separated fields"),
        ("1ABC\t1\tGGG\tX\n", "found 4"),
        ("1ABC GGG\t1\tGGG\n", "not a PDB id"),
        ("1ABC\tA\tGGG\n", "entity is not a number"),
        ("1ABC\t1\tGG-G\n", "not a one-letter sequence"),
        ("1ABC\t1\tGG(PSU\n", "not a one-letter sequence"),
        ("1ABC\t1\tGGG\n1abc\t1\tGGG\n", "repeated (first on line 1)"),
        ("1ABC\t1\tGG\x00G\n", "NUL"),
    ],
)
def test_malformed_or_partial_files_are_rejected_whole(text, message):
    with pytest.raises(pr.PrereleaseFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pr.parse_rows(text)


def test_files_of_different_weeks_disagree():
    canonical = CANONICAL.replace("1GID\t1\t", "1GIX\t1\t")
    with pytest.raises(pr.PrereleaseFormatError, match="the two files disagree: 1 polymer"):
        pr.parse_files(PLAIN, canonical)
    # the canonical file cut after a complete line is a different set of polymers, not a parse error
    cut = "".join(CANONICAL.splitlines(keepends=True)[:3])
    with pytest.raises(pr.PrereleaseFormatError, match="disagree"):
        pr.parse_files(PLAIN, cut)


def test_client_reads_last_modified_and_retries_a_cut_body_and_500s():
    modified = dt.datetime(2024, 1, 6, 3, 12, tzinfo=UTC)
    with LocalWwpdb() as site:
        site.publish(pr.SEQUENCE_FILE, PLAIN, last_modified=modified)
        waits: list[float] = []
        client = pr.WwpdbClient(site.base_url, retries=3, backoff=0.5, sleep=waits.append)
        site.cut[pr.SEQUENCE_FILE] = 1
        site.fail_500[pr.SEQUENCE_FILE] = 1
        got = client.fetch(pr.SEQUENCE_FILE)
        assert got.text == PLAIN and got.last_modified == modified and len(got.sha256) == 64
        assert site.hits(pr.SEQUENCE_FILE) == 3 and waits == [0.5, 1.0]
        with pytest.raises(pr.PrereleaseUnavailable) as missing:
            client.fetch(pr.CANONICAL_FILE)
        assert missing.value.status == 404
        site.fail_500[pr.SEQUENCE_FILE] = 10
        with pytest.raises(pr.PrereleaseUnavailable, match="failed after 4 attempt"):
            client.fetch(pr.SEQUENCE_FILE)


def test_scheduled_versions_follow_the_clock():
    now = [dt.datetime(2024, 1, 5, 12, tzinfo=UTC)]
    with LocalWwpdb(clock=lambda: now[0]) as site:
        old = "1OLD\t1\tGGGAAACCCUUUGGGAAACCCAA\n"
        site.publish(pr.SEQUENCE_FILE, old, at=dt.datetime(2023, 12, 30, 3, tzinfo=UTC))
        site.publish(pr.SEQUENCE_FILE, PLAIN, at=dt.datetime(2024, 1, 6, 3, tzinfo=UTC))
        client = pr.WwpdbClient(site.base_url, retries=0)
        assert client.fetch(pr.SEQUENCE_FILE).text.startswith("1OLD")
        now[0] = dt.datetime(2024, 1, 6, 4, tzinfo=UTC)
        got = client.fetch(pr.SEQUENCE_FILE)
        assert got.text == PLAIN and got.last_modified == dt.datetime(2024, 1, 6, 3, tzinfo=UTC)


def test_holdings_client(mmcif_dir):
    now = [dt.datetime(2024, 1, 9, 12, tzinfo=UTC)]
    entries = [LocalEntry("9GID", dt.date(2024, 1, 10), mmcif_dir / "1gid.cif.gz")]
    with LocalRcsb(entries, clock=lambda: now[0]) as rcsb:
        rcsb.holdings["9WDR"] = ("UNRELEASED", "WDRN")
        client = HoldingsClient(rcsb.data_url, retries=1, sleep=lambda s: None)
        held = client.status("9gid")
        assert (held.status, held.code) == (UNRELEASED, "HPUB") and "hold" in held.describe
        assert client.status("9WDR").describe == "unreleased (WDRN: withdrawn)"
        assert client.status("9ZZZ").status == UNKNOWN
        now[0] = dt.datetime(2024, 1, 10, 0, 1, tzinfo=UTC)
        assert client.status("9GID").status == CURRENT
        rcsb.holdings["9BAD"] = ("SOMETHING", "X1")
        with pytest.raises(HoldingsError, match="unexpected status"):
            client.status("9BAD")


def test_time_travel_clock_setting():
    clock = parse_clock("2024-01-06T03:00:00Z@1000x3600")
    assert clock.at(1000) == dt.datetime(2024, 1, 6, 3, tzinfo=UTC)
    assert clock.at(1001) == dt.datetime(2024, 1, 6, 4, tzinfo=UTC)
    assert clock.real_seconds(3600 * 24) == 24
    assert parse_clock("").simulated is False and parse_clock("").at(0) == dt.datetime(1970, 1, 1, tzinfo=UTC)
    for bad in ("2024-01-06@1000", "2024-01-06T03:00:00Z@abc", "2024-01-06T03:00:00+02:00@10", "x@1x0"):
        with pytest.raises(ClockSettingError):
            parse_clock(bad)
    with pytest.raises(ClockSettingError, match="positive"):
        parse_clock("2024-01-06T03:00:00Z@1000x0")
