"""The embedded set-up's SQLite (``make run``) runs in write-ahead-log mode: a long read in one process (a
snapshot being written, a ranking reading its scores) does not hold back another process's commits, as the
rollback journal's shared lock did (issue 28: in `make run` the predictions per minute fell from hundreds to
tens while a snapshot was built, and the build itself failed with "database is locked")."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper


def _wrapper(path, timeout: float) -> DatabaseWrapper:
    settings_dict = {**connection.settings_dict, "NAME": str(path)}
    settings_dict["OPTIONS"] = {**settings_dict.get("OPTIONS", {}), "timeout": timeout}
    wrapper = DatabaseWrapper(settings_dict, alias=f"wal-{timeout}")
    wrapper.connect()
    return wrapper


@pytest.mark.django_db
def test_a_file_database_opens_in_wal_mode_and_an_open_read_does_not_block_a_commit(tmp_path):
    if connection.vendor != "sqlite":  # the check is of the SQLite options; PostgreSQL has no such lock
        return
    path = tmp_path / "comparna.sqlite3"
    reader, writer = _wrapper(path, 30), _wrapper(path, 0.5)
    try:
        assert reader.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        reader.connection.execute("CREATE TABLE t (x INTEGER)")
        reader.connection.executemany("INSERT INTO t VALUES (?)", [(k,) for k in range(5000)])
        reader.connection.commit()
        # a streaming read left open, as a chunked iterator leaves it between chunks
        rows = reader.connection.execute("SELECT x FROM t")
        assert rows.fetchone() == (0,)
        # another process commits meanwhile (in rollback-journal mode: "database is locked" after 0.5 s)
        writer.connection.execute("INSERT INTO t VALUES (-1)")
        writer.connection.commit()
        assert sum(1 for _ in rows) == 4999  # the reader goes on with its own view
        assert reader.connection.execute("SELECT count(*) FROM t").fetchone() == (5001,)
    finally:
        reader.close()
        writer.close()
