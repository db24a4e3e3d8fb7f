"""Backups: a consistent database dump plus the data directory's images and snapshots, with a manifest.

A backup is a private directory (0700, every file 0600; a world-writable destination is refused)::

    manifest.json      format, time, database engine, migration leaves, every file's size and sha256
    SHA256SUMS         the same checksums for ``sha256sum -c``
    database.dump      ``pg_dump -Fc`` (PostgreSQL), or database.sqlite3 (SQLite's online backup API)
    files/images/...   the checked image archives (COMPARNA_IMAGES_DIR)
    files/snapshots/.. the dataset snapshot archives (COMPARNA_SNAPSHOT_DIR)
    files/secret_key   the embedded run's generated key, when the data directory holds one

Both dumps are consistent while the site runs (pg_dump reads one snapshot; SQLite's backup API copies a
consistent state). Files are copied after the dump, so every file a dumped row names is there (archives
are immutable once their row says so). :func:`restore_backup` verifies every checksum before it changes
anything and refuses a damaged or altered backup.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

FORMAT = 1
MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
Progress = Callable[[str], None]


class BackupError(Exception):
    """A backup that cannot be made, or a backup that is damaged, incomplete or not ours."""


def file_groups() -> dict[str, Path]:
    """The directories a backup copies, by their name inside ``files/``."""
    from predictors.core.owner_image import archives_dir

    return {"images": archives_dir(), "snapshots": Path(settings.SNAPSHOT_DIR)}


def _secret_key_file() -> Path:
    return Path(settings.DATA_DIR) / "secret_key"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _engine() -> str:
    vendor = connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        raise BackupError(f"database engine {vendor!r} is not supported (PostgreSQL or SQLite)")
    return vendor


def _pg_tool(name: str) -> str:
    configured = os.environ.get(f"COMPARNA_{name.upper()}")
    found = configured or shutil.which(name)
    if not found:
        raise BackupError(
            f"{name} not found (apt-get install postgresql-client, or set COMPARNA_{name.upper()})"
        )
    return found


def _pg_args_env() -> tuple[list[str], dict]:
    db = settings.DATABASES["default"]
    args = ["--dbname", db["NAME"]]
    if db.get("HOST"):
        args += ["--host", str(db["HOST"])]
    if db.get("PORT"):
        args += ["--port", str(db["PORT"])]
    if db.get("USER"):
        args += ["--username", str(db["USER"])]
    env = {**os.environ, "PGPASSWORD": str(db.get("PASSWORD") or "")}
    return args, env


def _dump_database(target_dir: Path) -> str:
    if _engine() == "postgresql":
        name = "database.dump"
        args, env = _pg_args_env()
        proc = subprocess.run(
            [
                _pg_tool("pg_dump"),
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                "--file",
                str(target_dir / name),
                *args,
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise BackupError(f"pg_dump failed: {proc.stderr.strip()[-2000:]}")
        return name
    name = "database.sqlite3"
    connection.ensure_connection()
    destination = sqlite3.connect(target_dir / name)
    try:
        connection.connection.backup(destination)
    finally:
        destination.close()
    return name


def _migration_leaves() -> dict[str, str]:
    leaves: dict[str, str] = {}
    for app, name in MigrationRecorder(connection).applied_migrations():
        leaves[app] = max(leaves.get(app, ""), name)
    return dict(sorted(leaves.items()))


@contextlib.contextmanager
def _private_umask():
    """New files 0600 and directories 0700 (pg_dump's too) while the backup is written."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


def _world_writable(st: os.stat_result) -> bool:
    return bool(st.st_mode & stat.S_IWOTH)


def _prepare_destination(dest: Path) -> None:
    """Make ``dest`` a private (0700) directory of ours, or refuse it (issue 36: a backup holds password
    hashes and session keys).

    A new directory is made 0700 (its missing parents too). An existing one must be empty, a directory
    (not a link), ours, and not world-writable (anyone could have put or could swap files in it); it is
    tightened to 0700 whatever its mode was. The nearest existing ancestor must not be world-writable
    without the sticky bit (anyone could rename the backup away or put a link in its place)."""
    if dest.is_symlink():
        raise BackupError(f"{dest} is a symbolic link; give a real directory")
    ancestor = dest if dest.exists() else next(p for p in dest.parents if p.exists())
    if ancestor != dest:
        st = ancestor.stat()
        if _world_writable(st) and not st.st_mode & stat.S_ISVTX:
            raise BackupError(f"{ancestor} is writable by everyone; put the backup somewhere private")
        dest.mkdir(parents=True, mode=0o700)
    else:
        if not dest.is_dir():
            raise BackupError(f"{dest} is not a directory")
        if any(dest.iterdir()):
            raise BackupError(f"{dest} is not empty; give a new directory")
        st = dest.stat()
        if _world_writable(st):
            raise BackupError(f"{dest} is writable by everyone; give a new or private directory")
        if st.st_uid != os.geteuid():
            raise BackupError(f"{dest} belongs to another user; give a new directory")
    os.chmod(dest, 0o700)


def _tighten(dest: Path) -> None:
    """Every file 0600 and every directory 0700 (copies keep their sources' modes, e.g. 0644)."""
    for root, dirs, files in os.walk(dest):
        for name, mode in [(d, 0o700) for d in dirs] + [(f, 0o600) for f in files]:
            path = os.path.join(root, name)
            if not os.path.islink(path):  # none are left (links are not backed up): never follow one
                os.chmod(path, mode)


def create_backup(*, dest: Path, progress: Progress = lambda _m: None) -> dict:
    """Write a backup into the new or empty directory ``dest``; returns its manifest. Every file is
    created 0600 inside 0700 directories (:func:`_prepare_destination` says which destinations are
    refused)."""
    dest = Path(dest).absolute()
    with _private_umask():
        _prepare_destination(dest)
        manifest = _write_backup(dest, progress)
        _tighten(dest)
    return manifest


def _write_backup(dest: Path, progress: Progress) -> dict:
    progress("dumping the database")
    database = _dump_database(dest)
    entries: dict[str, dict] = {}
    for group, source in file_groups().items():
        progress(f"copying {group} from {source}")
        if source.is_dir():
            shutil.copytree(source, dest / "files" / group, symlinks=True)
    if _secret_key_file().is_file():
        (dest / "files").mkdir(exist_ok=True)
        shutil.copy2(_secret_key_file(), dest / "files" / "secret_key")
    progress("checksums")
    for path in sorted(p for p in dest.rglob("*") if p.is_file() or p.is_symlink()):
        if path.is_symlink():
            path.unlink()  # only regular files are backed up (the stores hold no links of their own)
            continue
        rel = path.relative_to(dest).as_posix()
        entries[rel] = {"size": path.stat().st_size, "sha256": sha256_of(path)}
    manifest = {
        "format": FORMAT,
        "created_at": dt.datetime.now(dt.UTC).isoformat(),
        "engine": _engine(),
        "database": database,
        "migrations": _migration_leaves(),
        "files": entries,
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    (dest / SUMS).write_text("".join(f"{e['sha256']}  {rel}\n" for rel, e in entries.items()))
    return manifest


def _safe_relative(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or rel != path.as_posix():
        raise BackupError(f"manifest names a path outside the backup: {rel!r}")
    return path


def verify_backup(*, src: Path) -> dict:
    """The manifest of the backup ``src`` after checking every file against it; raises BackupError."""
    src = Path(src)
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise BackupError(f"{src / MANIFEST} is missing or unreadable: {exc}") from exc
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("files"), dict)
    ):
        raise BackupError(f"{src} is not a CompaRNA backup of format {FORMAT}")
    files = manifest["files"]
    problems: list[str] = []
    for rel, entry in sorted(files.items()):
        path = src / _safe_relative(rel)
        if path.is_symlink() or not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.stat().st_size != entry.get("size"):
            problems.append(f"{rel}: size {path.stat().st_size}, manifest {entry.get('size')}")
        elif sha256_of(path) != entry.get("sha256"):
            problems.append(f"{rel}: checksum differs from the manifest")
    for path in src.rglob("*"):
        rel = path.relative_to(src).as_posix()
        if (path.is_file() or path.is_symlink()) and rel not in files and rel not in (MANIFEST, SUMS):
            problems.append(f"{rel}: not in the manifest")
    if manifest.get("database") not in files:
        problems.append("the database dump is not in the manifest")
    if problems:
        raise BackupError("damaged backup, nothing restored:\n  " + "\n  ".join(problems[:50]))
    return manifest


def _drop_statements() -> bytes:
    tables = connection.introspection.table_names()
    return "".join(f"DROP TABLE IF EXISTS {connection.ops.quote_name(t)} CASCADE;\n" for t in tables).encode()


def _restore_postgresql(dump: Path) -> None:
    """Drop every table and load the dump in ONE transaction (psql --single-transaction): a failure
    anywhere leaves the database as it was."""
    args, env = _pg_args_env()
    psql = subprocess.Popen(
        [
            _pg_tool("psql"),
            "--no-psqlrc",
            "--quiet",
            "--single-transaction",
            "-v",
            "ON_ERROR_STOP=1",
            "--file",
            "-",
            *args,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    script = subprocess.Popen(
        [_pg_tool("pg_restore"), "--no-owner", "--no-privileges", "--file", "-", str(dump)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        psql.stdin.write(_drop_statements())
        for block in iter(lambda: script.stdout.read(1 << 20), b""):
            psql.stdin.write(block)
    except BrokenPipeError:
        pass  # psql stopped at an error: reported below
    finally:
        psql.stdin.close()
        script.stdout.close()
    script_err = script.stderr.read().decode(errors="replace")
    psql_err = psql.stderr.read().decode(errors="replace")
    if script.wait() != 0:
        psql.kill()
        psql.wait()
        raise BackupError(f"pg_restore could not read the dump: {script_err.strip()[-2000:]}")
    if psql.wait() != 0:
        raise BackupError(f"loading the dump failed, nothing changed: {psql_err.strip()[-2000:]}")


def _restore_database(src: Path, manifest: dict) -> None:
    engine = _engine()
    if manifest.get("engine") != engine:
        raise BackupError(f"the backup holds a {manifest.get('engine')} database; this site uses {engine}")
    dump = src / manifest["database"]
    if engine == "postgresql":
        connection.close()  # our own session must not hold locks on the tables psql drops
        _restore_postgresql(dump)
        return
    connection.ensure_connection()
    source = sqlite3.connect(dump)
    try:
        source.backup(connection.connection)
    finally:
        source.close()


def _replace_directory(target: Path, source: Path | None) -> None:
    """Make ``target`` hold exactly the files of ``source`` (None: nothing), swapping in a full copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-restore-", dir=target.parent))
    fresh = staging / "new"
    if source is not None and source.is_dir():
        shutil.copytree(source, fresh)
    else:
        fresh.mkdir()
    old = staging / "old"
    if target.exists():
        os.rename(target, old)
    os.rename(fresh, target)
    shutil.rmtree(staging, ignore_errors=True)


def restore_backup(*, src: Path, progress: Progress = lambda _m: None) -> dict:
    """Verify the backup ``src``, then replace the database and the image and snapshot stores with it."""
    src = Path(src)
    progress("verifying checksums")
    manifest = verify_backup(src=src)
    progress(f"restoring the {manifest['engine']} database")
    _restore_database(src, manifest)
    for group, target in file_groups().items():
        progress(f"restoring {group} into {target}")
        _replace_directory(target, src / "files" / group)
    key = src / "files" / "secret_key"
    if key.is_file() and not os.environ.get("DJANGO_SECRET_KEY"):
        shutil.copy2(key, _secret_key_file())
        os.chmod(_secret_key_file(), 0o600)
    return manifest
