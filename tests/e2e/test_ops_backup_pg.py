"""manage.py backup / restore on a real PostgreSQL (pg_dump -Fc, then one psql transaction to load it).

A site with rankings, a dataset snapshot and an owner is backed up; the database is wiped (schema dropped)
and migrated afresh with a row of its own, the stores deleted; restore gives back every row (dumpdata of
every table), the stores' files and the owner's password. A damaged dump is refused and changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import REPO, postgres

pytestmark = pytest.mark.timeout(600)

BUILD = """
import django; django.setup()
from tests.support.ops_site import site_with_rankings_snapshot_and_owner
site_with_rankings_snapshot_and_owner()
"""
DUMP = """
import django, json, sys; django.setup()
from tests.support.ops_site import everything, files_of
from pathlib import Path
import os
rows = everything()
stores = {k: files_of(Path(os.environ[v])) if Path(os.environ[v]).exists() else {}
          for k, v in (("images", "COMPARNA_IMAGES_DIR"), ("snapshots", "COMPARNA_SNAPSHOT_DIR"))}
from django.contrib.auth import get_user_model
owner = get_user_model().objects.filter(username="owner").first()
json.dump({"rows": [[list(k), v] for k, v in sorted(rows.items())], "stores": stores,
           "owner_password_ok": bool(owner and owner.check_password("a-long-password-42"))}, sys.stdout)
"""
WIPE = """
import django; django.setup()
from django.db import connection
with connection.cursor() as c:
    c.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
"""
LATER_ROW = """
import django; django.setup()
from tests.factories import make_method_version
make_method_version("AfterTheBackup")
"""


def test_backup_wipe_restore_on_postgresql():
    work = Path(tempfile.mkdtemp(prefix="comparna-backup-pg-"))
    try:
        with postgres() as database_url:
            env = {
                **os.environ,
                "DATABASE_URL": database_url,
                "COMPARNA_DATA_DIR": str(work / "data"),
                "COMPARNA_IMAGES_DIR": str(work / "images"),
                "COMPARNA_SNAPSHOT_DIR": str(work / "snapshots"),
                "DJANGO_SETTINGS_MODULE": "comparna.settings",
                "PYTHONPATH": str(REPO),
            }

            def run(*argv, check=True):
                proc = subprocess.run(
                    [sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
                )
                if check:
                    assert proc.returncode == 0, proc.stderr[-4000:]
                return proc

            def state():
                return json.loads(run("-c", DUMP).stdout)

            run("manage.py", "migrate", "--noinput")
            (work / "images").mkdir()
            (work / "images" / ("cd" * 32 + ".tar")).write_bytes(b"image archive" * 1000)
            run("-c", BUILD)
            before = state()
            assert before["owner_password_ok"]
            assert before["stores"]["snapshots"] and before["stores"]["images"]
            assert any(model == "comparna.rankingsnapshot" for (model, _), _ in before["rows"])

            run("manage.py", "backup", str(work / "backup"))
            manifest = json.loads((work / "backup" / "manifest.json").read_text())
            assert manifest["engine"] == "postgresql" and "database.dump" in manifest["files"]
            assert (work / "backup" / "database.dump").read_bytes()[:5] == b"PGDMP"  # custom format

            run("-c", WIPE)
            shutil.rmtree(work / "images")
            shutil.rmtree(work / "snapshots")
            run("manage.py", "migrate", "--noinput")
            run("-c", LATER_ROW)
            assert state()["rows"] != before["rows"]

            run("manage.py", "restore", str(work / "backup"), "--noinput")
            after = state()
            assert after == before

            # a damaged dump: refused, the restored site stays as it is
            dump = work / "backup" / "database.dump"
            data = bytearray(dump.read_bytes())
            data[len(data) // 2] ^= 0xFF
            dump.write_bytes(bytes(data))
            run("-c", LATER_ROW)
            changed = state()
            proc = run("manage.py", "restore", str(work / "backup"), "--noinput", check=False)
            assert proc.returncode != 0 and "database.dump: checksum differs" in proc.stderr
            assert state() == changed
    finally:
        shutil.rmtree(work, ignore_errors=True)
