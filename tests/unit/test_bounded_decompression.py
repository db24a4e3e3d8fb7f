"""Gzip bombs: every archive the project reads is decompressed under caps (issue 11).

A tiny compressed file that inflates enormously must end in a clear, recorded error — an unreadable
entry, an archive reported too large, a failed download — without the memory (or the time) the whole
inflated content would take. The issue's case: a 313 KB tarball member inflating to 300 MB took 792 MB
of memory in ``import_rnastrand``.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from comparna.bounded import CappedInflater, TarBudget, TooLarge, gunzip_capped

REPO = Path(__file__).resolve().parents[2]
BPSEQ = (
    "# RNA SSTRAND database\n# External source: Rfam\n"
    "1 G 9\n2 G 8\n3 G 7\n4 A 0\n5 A 0\n6 A 0\n7 C 3\n8 C 2\n9 C 1\n"
)


class _Zeros(io.RawIOBase):
    """``n`` zero bytes, produced as read (a bomb is built without holding it)."""

    def __init__(self, n: int):
        self.left = n

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        k = min(len(buffer), self.left)
        buffer[:k] = b"\0" * k
        self.left -= k
        return k


def strand_tarball(path: Path, *, bomb_mb: int, entries: int = 3) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=9) as tf:
        for k in range(entries):
            data = BPSEQ.encode()
            info = tarfile.TarInfo(f"rna_strand_v2.0_bpseq/RFA_{k:05d}.bpseq")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("rna_strand_v2.0_bpseq/RFA_99999.bpseq")
        info.size = bomb_mb * 2**20
        tf.addfile(info, io.BufferedReader(_Zeros(info.size), 2**20))
    return path


READ_STRAND = """
import json, resource, sys
from ingest.strand.reader import iter_entries, StrandError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = list(iter_entries(sys.argv[1]))
grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
errors = [e.message for e in found if isinstance(e, StrandError)]
print(json.dumps({"ok": len(found) - len(errors), "errors": errors, "grown_mb": grown_mb}))
"""


@pytest.mark.slow
def test_rnastrand_member_inflating_to_300_mb_is_an_error_not_792_mb_of_memory(tmp_path):
    bomb = strand_tarball(tmp_path / "bomb.tar.gz", bomb_mb=300)
    assert bomb.stat().st_size < 400 * 1024  # the 313 KB
    out = subprocess.run(
        [sys.executable, "-c", READ_STRAND, str(bomb)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["ok"] == 3 and len(got["errors"]) == 1 and "over the 4194304 byte limit" in got["errors"][0]
    assert got["grown_mb"] < 50, got  # the member is never held


def test_rnastrand_archive_over_its_total_cap_stops_the_import(tmp_path, monkeypatch):
    from ingest.strand import reader

    bomb = strand_tarball(tmp_path / "bomb.tar.gz", bomb_mb=3)
    monkeypatch.setattr(reader, "MAX_TOTAL_BYTES", 2 * 2**20)
    with pytest.raises(TooLarge, match="more than 2 MB in total"):
        list(reader.iter_entries(bomb))
    with pytest.raises(TooLarge):
        reader.count_entries(bomb)


@pytest.mark.django_db
def test_import_rnastrand_command_reports_a_too_large_archive(tmp_path, monkeypatch):
    from django.core.management import CommandError, call_command

    from ingest.strand import reader

    bomb = strand_tarball(tmp_path / "bomb.tar.gz", bomb_mb=3)
    monkeypatch.setattr(reader, "MAX_TOTAL_BYTES", 2 * 2**20)
    with pytest.raises(CommandError, match="decompresses to more than 2 MB"):
        call_command("import_rnastrand", str(bomb), "--no-progress")


def test_snapshot_archive_members_over_their_caps_are_reported(tmp_path, monkeypatch):
    from comparna.snapshots import archive

    path = tmp_path / "snap.tar.gz"
    w = archive.SnapshotWriter(path, root="bomb", mtime=0)
    w.add_bytes("data/big.bin", b"\0" * (3 * 2**20))
    w.close()
    assert archive.verify_archive(path).ok
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 2**20)
    report = archive.verify_archive(path)
    assert not report.ok and any("over the 1 MB limit per member" in p for p in report.problems)
    with pytest.raises(archive.ArchiveError, match="too large"):
        for _name, fh in archive.iter_members(path):
            fh.read()
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 2**30)
    monkeypatch.setattr(archive, "MAX_MANIFEST_BYTES", 10)
    assert any("MANIFEST is over" in p for p in archive.verify_archive(path).problems)


def test_gzip_file_and_download_bombs_are_capped(tmp_path):
    raw = b"\0" * (8 * 2**20)
    gz = tmp_path / "x.cif.gz"
    gz.write_bytes(gzip.compress(raw + b"data_x\n"))
    with pytest.raises(TooLarge, match="more than 1 MB"):
        gunzip_capped(gz, 2**20)
    inflater = CappedInflater(2**20, "x.cif.gz", chunk=64 * 1024)
    data = gzip.compress(raw)
    with pytest.raises(TooLarge):
        for k in range(0, len(data), 4096):
            inflater.feed(data[k : k + 4096])
    assert inflater.size <= 2**20 + 64 * 1024  # never more than one chunk past the cap
    # Within the cap: the whole stream is checked (CRC, length), multi-member included.
    ok = CappedInflater(2**24, "y")
    ok.feed(gzip.compress(b"a" * 1000) + gzip.compress(b"b" * 10))
    assert ok.eof and ok.size == 1010
    damaged = gzip.compress(b"a" * 1000)
    with pytest.raises(zlib.error):  # a wrong CRC-32 in the trailer
        CappedInflater(2**24, "z").feed(damaged[:-8] + bytes(8))


def test_structure_file_bomb_is_an_unreadable_file(tmp_path, monkeypatch):
    from ingest.pdb import extract

    gz = tmp_path / "1ABC.cif.gz"
    gz.write_bytes(gzip.compress(b"data_1ABC\n" + b" " * (4 * 2**20)))
    monkeypatch.setattr(extract, "MAX_STRUCTURE_BYTES", 2**20)
    with pytest.raises(extract.StructureFileError, match="more than 1 MB"):
        extract.read_text(gz)


def test_rcsb_download_bomb_fails_without_retrying(tmp_path, mmcif_dir, monkeypatch):
    from ingest.pdb import rcsb
    from tests.support.local_rcsb import LocalRcsb, fixture_entries

    monkeypatch.setattr(rcsb, "MAX_STRUCTURE_BYTES", 2**20)
    with LocalRcsb(fixture_entries(mmcif_dir)) as server:
        server.bodies["1EHZ"] = gzip.compress(b"data_1EHZ\n" + b"\0" * (16 * 2**20))
        client = rcsb.RcsbClient(
            server.search_url, server.download_url, timeout=5, retries=3, backoff=0.01, sleep=lambda s: None
        )
        with pytest.raises(rcsb.DownloadFailed, match="more than 1 MB"):
            client.download("1EHZ", tmp_path)
        assert server.hits("/download/1EHZ") == 1  # a bomb is not fetched again
    assert list(tmp_path.iterdir()) == []


def test_tar_budget_counts_members():
    budget = TarBudget(member_cap=10, total_cap=14, what="t", max_members=3)
    info = tarfile.TarInfo("a")
    info.size = 5
    budget.admit(info)
    budget.admit(info)
    with pytest.raises(TooLarge, match="in total"):
        budget.admit(info)
    big = tarfile.TarInfo("b")
    big.size = 11
    with pytest.raises(TooLarge, match="per member"):
        TarBudget(member_cap=10, total_cap=100).admit(big)
    assert json.dumps(budget.total) == "15"
    with pytest.raises(TooLarge, match="more than 3 members"):
        budget.admit(info)
