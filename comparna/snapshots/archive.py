"""Snapshot archives: a gzip-compressed tar written streamed to disk, with a MANIFEST of SHA-256 checksums.

Pure module (standard library only). Layout of an archive::

    <root>/README.md
    <root>/...                 every data file
    <root>/MANIFEST            "<sha256>  <path>" per file (``sha256sum -c MANIFEST`` format), last member

Every member is first written to a temporary file next to the archive (so no member and never the archive is
held in memory), then appended to the tar stream while its SHA-256 is computed. The archive itself is written
to a temporary file, hashed while being written, fsync'ed and moved into place with ``os.replace``, so a
reader never sees a half-written archive under the final name.

Members are written with a fixed mtime, owner 0 and mode 0644 so that equal contents give equal bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from comparna.bounded import TarBudget, TooLarge

MANIFEST_NAME = "MANIFEST"
CHUNK = 1 << 20
#: Caps on what an archive may decompress to (a snapshot of the whole RNA STRAND benchmark with every
#: method is a few hundred MB): per member, in total, for the MANIFEST (read whole), and for bytes after
#: the tar's end. Beyond them the archive is reported as too large instead of being read on.
MAX_MEMBER_BYTES = 4 * 2**30
MAX_TOTAL_BYTES = 16 * 2**30
MAX_MANIFEST_BYTES = 64 * 2**20
MAX_TRAILING_BYTES = 1 << 20

__all__ = [
    "MANIFEST_NAME",
    "ArchiveError",
    "ArchiveInfo",
    "MemberInfo",
    "SnapshotWriter",
    "VerificationReport",
    "file_sha256",
    "format_manifest",
    "iter_members",
    "parse_manifest",
    "verify_archive",
]


class ArchiveError(Exception):
    """A snapshot archive that cannot be written or read as such."""


@dataclass(frozen=True)
class MemberInfo:
    """One data file of an archive: path relative to the archive root, size in bytes, SHA-256."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class ArchiveInfo:
    """A finished archive: where it is, its size and SHA-256, and its files (MANIFEST excluded)."""

    path: Path
    root: str
    size: int
    sha256: str
    members: tuple[MemberInfo, ...]


@dataclass
class VerificationReport:
    """Outcome of :func:`verify_archive`; ``ok`` only when there is no problem at all."""

    path: Path
    root: str | None = None
    files: int = 0
    problems: list[str] = field(default_factory=list)
    manifest: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


class _HashingWriter:
    """Write-only file wrapper that hashes and counts what passes through (the archive as written)."""

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


class _HashingReader:
    """Read-only file wrapper that hashes what is read (a member while it is copied into the tar)."""

    def __init__(self, raw: IO[bytes]):
        self.raw = raw
        self.hash = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.hash.update(data)
        return data


def _check_name(name: str) -> str:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or name != p.as_posix() or name == MANIFEST_NAME:
        raise ArchiveError(f"invalid member name {name!r}")
    return name


class SnapshotWriter:
    """Write an archive member by member; :meth:`close` adds the MANIFEST and moves the file into place.

    Parameters
    ----------
    path : Path
        Final location of the ``.tar.gz``; the directory must exist. An existing file is replaced only when
        ``overwrite`` is true (snapshots are immutable: the service never asks for it).
    root : str
        Name of the single top-level directory every member lives in.
    mtime : float
        Modification time recorded for every member (the snapshot's creation time).
    compresslevel : int
        gzip level; 6 is about twice as fast as 9 for a few percent more bytes.

    Use as a context manager: an exception inside the block removes the temporary file.
    """

    def __init__(
        self, path: Path, *, root: str, mtime: float, compresslevel: int = 6, overwrite: bool = False
    ):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise ArchiveError(f"{self.path} exists; snapshots are never rewritten")
        if "/" in root or not root or root in (".", ".."):
            raise ArchiveError(f"invalid root directory name {root!r}")
        self.root = root
        self.mtime = int(mtime)
        self._members: list[MemberInfo] = []
        self._names: set[str] = set()
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".part", dir=self.path.parent)
        self._tmp = Path(tmp)
        self._raw = os.fdopen(fd, "wb")
        self._hashing = _HashingWriter(self._raw)
        self._gzip = gzip.GzipFile(
            filename="", mode="wb", fileobj=self._hashing, compresslevel=compresslevel, mtime=self.mtime
        )
        self._tar = tarfile.open(fileobj=self._gzip, mode="w|", format=tarfile.PAX_FORMAT)
        self._closed = False

    # -- context manager ------------------------------------------------------------------------------
    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()

    # -- members --------------------------------------------------------------------------------------
    def _tarinfo(self, name: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(f"{self.root}/{name}")
        info.size = size
        info.mtime = self.mtime
        info.mode = 0o644
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    def add_stream(self, name: str, stream: IO[bytes], size: int) -> MemberInfo:
        """Append ``size`` bytes read from ``stream`` as member ``name``; returns its size and SHA-256."""
        if self._closed:
            raise ArchiveError("archive already closed")
        _check_name(name)
        if name in self._names:
            raise ArchiveError(f"member {name!r} written twice")
        reader = _HashingReader(stream)
        self._tar.addfile(self._tarinfo(name, size), reader)
        member = MemberInfo(name, size, reader.hash.hexdigest())
        self._names.add(name)
        self._members.append(member)
        return member

    def add_bytes(self, name: str, data: bytes) -> MemberInfo:
        """Append a small member given as bytes."""
        return self.add_stream(name, io.BytesIO(data), len(data))

    def add_text(self, name: str, text: str) -> MemberInfo:
        """Append a small member given as text (UTF-8)."""
        return self.add_bytes(name, text.encode("utf-8"))

    @contextlib.contextmanager
    def open_text(self, name: str) -> Iterator[IO[str]]:
        """Yield a text file (UTF-8, newlines as written) spooled to disk; on exit it becomes member ``name``.

        For large members (CSV of every prediction): nothing of it stays in memory.
        """
        _check_name(name)
        with tempfile.TemporaryFile(dir=self.path.parent) as spool:
            text = io.TextIOWrapper(spool, encoding="utf-8", newline="", write_through=False)
            try:
                yield text
                text.flush()
                size = spool.tell()
                spool.seek(0)
                self.add_stream(name, spool, size)
            finally:
                text.detach()

    # -- finishing ------------------------------------------------------------------------------------
    def close(self) -> ArchiveInfo:
        """Write the MANIFEST, finish the gzip stream, fsync and move the archive to its final path."""
        if self._closed:
            raise ArchiveError("archive already closed")
        manifest = format_manifest(self._members).encode("utf-8")
        self._tar.addfile(self._tarinfo(MANIFEST_NAME, len(manifest)), io.BytesIO(manifest))
        self._tar.close()
        self._gzip.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        self._closed = True
        if self.path.exists():
            # Checked again: another builder may have finished the same path meanwhile.
            self._tmp.unlink(missing_ok=True)
            raise ArchiveError(f"{self.path} appeared while writing; snapshots are never rewritten")
        os.chmod(self._tmp, 0o444)
        os.replace(self._tmp, self.path)
        with contextlib.suppress(OSError):  # make the rename durable where the platform allows it
            dirfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dirfd)
            finally:
                os.close(dirfd)
        return ArchiveInfo(
            self.path, self.root, self._hashing.size, self._hashing.hash.hexdigest(), tuple(self._members)
        )

    def abort(self) -> None:
        """Drop the temporary file; the final path is left untouched."""
        if self._closed:
            return
        self._closed = True
        for closer in (self._tar.close, self._gzip.close, self._raw.close):
            with contextlib.suppress(Exception):
                closer()
        self._tmp.unlink(missing_ok=True)


def format_manifest(members) -> str:
    """MANIFEST text: one ``"<sha256>  <path>"`` line per member, sorted by path (``sha256sum`` format)."""
    return "".join(f"{m.sha256}  {m.name}\n" for m in sorted(members, key=lambda m: m.name))


def parse_manifest(text: str) -> dict[str, str]:
    """Path → SHA-256 from MANIFEST text; raises ArchiveError naming the first malformed line."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not name:
            raise ArchiveError(f"MANIFEST line {n} is not '<sha256>  <path>': {line[:100]!r}")
        if name in out:
            raise ArchiveError(f"MANIFEST lists {name!r} twice (line {n})")
        out[name] = digest
    return out


def file_sha256(path: Path, *, progress: Callable[[int], None] | None = None) -> str:
    """SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            if progress is not None:
                progress(len(chunk))
    return h.hexdigest()


# Errors the gzip and tar readers raise on a truncated or damaged file.
_READ_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError, OSError)


@contextlib.contextmanager
def _open_stream(path: Path):
    """The archive as a streamed tar whose members are checked against the caps before they are read."""
    budget = TarBudget(MAX_MEMBER_BYTES, MAX_TOTAL_BYTES, what=f"archive {Path(path).name}")
    with gzip.open(path, "rb") as gz:
        try:
            with tarfile.open(fileobj=gz, mode="r|") as tar:
                yield _BudgetedTar(tar, budget)
            # The tar end-of-archive blocks may come before the gzip trailer: read to the end so its CRC and
            # length are checked too (a cut in the last bytes is a truncated file all the same).
            trailing = 0
            while chunk := gz.read(CHUNK):
                trailing += len(chunk)
                if trailing > MAX_TRAILING_BYTES:
                    raise ArchiveError(f"archive has more than {MAX_TRAILING_BYTES} bytes after its end")
        except TooLarge as exc:
            raise ArchiveError(f"archive too large: {exc}") from exc
        except _READ_ERRORS as exc:
            raise ArchiveError(f"archive truncated or corrupt: {exc}") from exc


class _BudgetedTar:
    """Iterates a streamed tar, counting each member's declared size against a :class:`TarBudget`."""

    def __init__(self, tar: tarfile.TarFile, budget: TarBudget):
        self.tar, self.budget = tar, budget

    def __iter__(self):
        for info in self.tar:
            self.budget.admit(info)
            yield info

    def extractfile(self, info: tarfile.TarInfo):
        return self.tar.extractfile(info)


def _split_root(member_name: str) -> tuple[str, str]:
    root, _, rest = member_name.partition("/")
    return root, rest


class _MemberReader(io.RawIOBase):
    """A member of a streamed tar as a readable raw file, so io.TextIOWrapper and csv can read it."""

    def __init__(self, fh: IO[bytes]):
        self.fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.fh.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def iter_members(path: Path) -> Iterator[tuple[str, IO[bytes]]]:
    """Yield (path relative to the root, readable file) for every regular file, in archive order.

    Streams the archive once; a file must be read before the next one is requested. Raises ArchiveError
    on a truncated or corrupt archive. Does not check checksums: call :func:`verify_archive` first.
    """
    with _open_stream(Path(path)) as tar:
        for info in tar:
            if not info.isfile():
                continue
            _, rel = _split_root(info.name)
            fh = tar.extractfile(info)
            if fh is not None:
                yield rel, io.BufferedReader(_MemberReader(fh), CHUNK)


def verify_archive(path: Path, *, expected_sha256: str | None = None) -> VerificationReport:
    """Check every file of an archive against its MANIFEST in one streamed pass.

    A problem is reported (never raised) for: a file whose SHA-256 differs from the MANIFEST ("changed"),
    a MANIFEST entry without a file ("missing"), a file without a MANIFEST entry ("extra"), a member that
    is not a regular file or lies outside the single root directory, a duplicate member, a missing or
    malformed MANIFEST, a truncated or corrupt archive, and — when ``expected_sha256`` is given — a whole-file
    checksum that differs from it.
    """
    path = Path(path)
    report = VerificationReport(path)
    if not path.is_file():
        report.problems.append(f"{path}: no such file")
        return report
    if expected_sha256 is not None:
        actual = file_sha256(path)
        if actual != expected_sha256.lower():
            report.problems.append(f"archive checksum {actual} differs from the expected {expected_sha256}")
    seen: dict[str, str] = {}
    manifest_text: str | None = None
    try:
        with _open_stream(path) as tar:
            for info in tar:
                root, rel = _split_root(info.name)
                if report.root is None:
                    report.root = root
                if root != report.root or not rel or ".." in PurePosixPath(rel).parts:
                    report.problems.append(
                        f"unexpected: {info.name} lies outside the root directory {report.root}/"
                    )
                    continue
                if info.isdir():
                    continue
                if not info.isfile():
                    report.problems.append(f"unexpected: {rel} is not a regular file")
                    continue
                if rel == MANIFEST_NAME and info.size > MAX_MANIFEST_BYTES:
                    raise ArchiveError(f"archive too large: {MANIFEST_NAME} is over {MAX_MANIFEST_BYTES} B")
                fh = tar.extractfile(info)
                h = hashlib.sha256()
                buf = io.BytesIO() if rel == MANIFEST_NAME else None
                while chunk := fh.read(CHUNK):
                    h.update(chunk)
                    if buf is not None:
                        buf.write(chunk)
                if rel in seen or (rel == MANIFEST_NAME and manifest_text is not None):
                    report.problems.append(f"duplicate: {rel} appears twice in the archive")
                if buf is not None:
                    manifest_text = buf.getvalue().decode("utf-8", errors="replace")
                else:
                    seen[rel] = h.hexdigest()
    except ArchiveError as exc:
        report.problems.append(str(exc))
        if manifest_text is None:
            return report
    if manifest_text is None:
        report.problems.append(f"missing: {MANIFEST_NAME} (archive truncated, or not a CompaRNA snapshot)")
        return report
    try:
        report.manifest = parse_manifest(manifest_text)
    except ArchiveError as exc:
        report.problems.append(str(exc))
        return report
    for name, digest in sorted(report.manifest.items()):
        if name not in seen:
            report.problems.append(f"missing: {name} is listed in {MANIFEST_NAME} but not in the archive")
        elif seen[name] != digest:
            report.problems.append(f"changed: {name} has SHA-256 {seen[name]}, {MANIFEST_NAME} says {digest}")
    for name in sorted(set(seen) - set(report.manifest)):
        report.problems.append(f"extra: {name} is in the archive but not listed in {MANIFEST_NAME}")
    report.files = len(seen)
    return report
