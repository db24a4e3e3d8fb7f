"""Snapshot archives without a database: round trip, MANIFEST checked by sha256sum, every kind of damage."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from comparna.snapshots.archive import (
    MANIFEST_NAME,
    ArchiveError,
    SnapshotWriter,
    file_sha256,
    iter_members,
    parse_manifest,
    verify_archive,
)

REPO = Path(__file__).resolve().parents[2]
ROOT = "comparna-demo-1"


def build(path: Path) -> dict[str, bytes]:
    """Write a small archive; returns the expected contents of every data file."""
    big_lines = [f"T{n:05d},{'GCAU' * (n % 50)}\n" for n in range(20000)]  # ~2 MB, spooled, not in memory
    expected = {
        "README.md": "# demo\nåäö ünïcode\n".encode(),
        "data/small.txt": b"hello\n",
        "data/empty.txt": b"",
        "data/big.csv": "".join(big_lines).encode(),
    }
    with SnapshotWriter(path, root=ROOT, mtime=1_700_000_000) as w:
        w.add_text("README.md", expected["README.md"].decode())
        w.add_bytes("data/small.txt", expected["data/small.txt"])
        w.add_bytes("data/empty.txt", b"")
        with w.open_text("data/big.csv") as fh:
            for line in big_lines:
                fh.write(line)
        info = w.close()
    assert info.path == path and info.root == ROOT
    assert {m.name for m in info.members} == set(expected)
    assert info.size == path.stat().st_size
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    return expected


def rewrite(
    src: Path, dst: Path, *, change: str | None = None, drop: str | None = None, add: str | None = None
) -> None:
    """Copy an archive member by member with plain tarfile, damaging it on the way (MANIFEST kept)."""
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
        for info in tin.getmembers():
            rel = info.name.split("/", 1)[1]
            data = tin.extractfile(info).read()
            if rel == drop:
                continue
            if rel == change:
                data = data.replace(b"hello", b"jello")
                info.size = len(data)
            if add and rel == MANIFEST_NAME:
                extra = tarfile.TarInfo(f"{ROOT}/{add}")
                extra.size = 3
                tout.addfile(extra, io.BytesIO(b"new"))
            tout.addfile(info, io.BytesIO(data))


@pytest.fixture
def archive(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    path = tmp_path / "demo.tar.gz"
    return path, build(path)


def test_round_trip_and_manifest_checked_by_system_tools(archive, tmp_path):
    path, expected = archive
    report = verify_archive(path, expected_sha256=file_sha256(path))
    assert report.ok, report.problems
    assert report.files == 4 and report.root == ROOT
    got = {name: fh.read() for name, fh in iter_members(path)}
    manifest = parse_manifest(got.pop(MANIFEST_NAME).decode())
    assert got == expected
    # The MANIFEST agrees with hashes computed here, and with GNU tar + sha256sum on the extracted files.
    assert manifest == {name: hashlib.sha256(data).hexdigest() for name, data in expected.items()}
    subprocess.run(["tar", "-xzf", str(path), "-C", str(tmp_path)], check=True)
    proc = subprocess.run(
        ["sha256sum", "-c", MANIFEST_NAME], cwd=tmp_path / ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": OK") == 4
    # Fixed mtime and owner: members carry no trace of the machine that wrote them.
    with tarfile.open(path) as tar:
        assert {(m.mtime, m.uid, m.uname, m.mode) for m in tar.getmembers()} == {
            (1_700_000_000, 0, "", 0o644)
        }
        assert tar.getnames()[-1] == f"{ROOT}/{MANIFEST_NAME}"


def test_archive_is_written_atomically_and_never_rewritten(tmp_path):
    path = tmp_path / "a.tar.gz"
    with pytest.raises(RuntimeError), SnapshotWriter(path, root=ROOT, mtime=0) as w:
        w.add_bytes("x.txt", b"x")
        raise RuntimeError("builder died")
    assert not path.exists() and list(tmp_path.iterdir()) == []  # no temporary file left behind
    build(path)
    before = path.read_bytes()
    assert not os.access(path, os.W_OK) or os.geteuid() == 0  # read-only once done
    assert oct(path.stat().st_mode & 0o777) == oct(0o444)
    with pytest.raises(ArchiveError, match="never rewritten"):
        SnapshotWriter(path, root=ROOT, mtime=0)
    assert path.read_bytes() == before
    with (
        pytest.raises(ArchiveError, match="invalid member name"),
        SnapshotWriter(tmp_path / "b.tar.gz", root=ROOT, mtime=0) as w,
    ):
        w.add_bytes("../escape", b"x")
    with (
        pytest.raises(ArchiveError, match="written twice"),
        SnapshotWriter(tmp_path / "c.tar.gz", root=ROOT, mtime=0) as w,
    ):
        w.add_bytes("a", b"x")
        w.add_bytes("a", b"y")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ({"change": "data/small.txt"}, "changed: data/small.txt"),
        ({"drop": "data/big.csv"}, "missing: data/big.csv"),
        ({"add": "data/sneaky.txt"}, "extra: data/sneaky.txt"),
        ({"drop": MANIFEST_NAME}, f"missing: {MANIFEST_NAME}"),
    ],
)
def test_damaged_archive_is_reported_naming_the_file(archive, tmp_path, damage, message):
    path, _ = archive
    bad = tmp_path / "bad.tar.gz"
    rewrite(path, bad, **damage)
    report = verify_archive(bad)
    assert not report.ok
    assert any(p.startswith(message) for p in report.problems), report.problems


@pytest.mark.parametrize("keep", [0.5, 0.999, -4])
def test_truncated_archive_is_reported(archive, tmp_path, keep):
    path, _ = archive
    data = path.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(
        data[: int(len(data) * keep)] if keep > 0 else data[:keep]
    )  # -4: only the gzip trailer lost
    report = verify_archive(cut)
    assert not report.ok
    assert any("truncated" in p for p in report.problems), report.problems
    assert verify_archive(path, expected_sha256="0" * 64).problems[0].startswith("archive checksum")


def test_not_an_archive(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar file at all" * 100))
    assert not verify_archive(junk).ok
    assert verify_archive(tmp_path / "nope.tar.gz").problems == [f"{tmp_path / 'nope.tar.gz'}: no such file"]


def _manage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_verify_command_exit_status(archive, tmp_path):
    path, _ = archive
    ok = _manage("verify_snapshot", str(path))
    assert ok.returncode == 0, ok.stderr
    assert "OK, 4 files" in ok.stdout
    bad = tmp_path / "bad.tar.gz"
    rewrite(path, bad, change="data/small.txt")
    proc = _manage("verify_snapshot", str(bad))
    assert proc.returncode != 0
    assert "NOT intact" in proc.stderr and "changed: data/small.txt" in proc.stderr
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[:-100])
    proc = _manage("verify_snapshot", str(cut))
    assert proc.returncode != 0 and "truncated" in proc.stderr


def test_archive_module_is_pure():
    """Only the standard library: the archive code runs (and can be reused) without Django or Celery."""
    import ast

    import comparna.bounded as bounded_module
    import comparna.snapshots.archive as archive_module

    for module in (archive_module, bounded_module):  # the archive uses the (pure) decompression caps
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported -= {"comparna.bounded"}
        top = {m.split(".")[0] for m in imported}
        assert top and top <= set(sys.stdlib_module_names) | {"__future__"}, imported
