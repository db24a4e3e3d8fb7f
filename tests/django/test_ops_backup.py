"""manage.py backup / restore on the embedded SQLite database (PostgreSQL: tests/e2e/test_ops_backup_pg.py).

Backup -> wipe (flush, stores deleted, a later row added) -> restore gives back exactly the rows (every
table's dumpdata), the rankings, the snapshot archives and the owner accounts; a damaged backup is refused
before anything changes.
"""

from __future__ import annotations

import io
import json
import shutil

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from comparna.models import RankingSnapshot
from comparna.ops.backup import sha256_of
from comparna.snapshots.lifecycle import snapshot_path
from comparna.snapshots.models import DatasetSnapshot
from tests.factories import make_method_version
from tests.support.ops_site import everything, files_of, site_with_rankings_snapshot_and_owner

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stores(settings, tmp_path, monkeypatch):
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    images = tmp_path / "images"
    monkeypatch.setenv("COMPARNA_IMAGES_DIR", str(images))
    images.mkdir()
    (images / ("ab" * 32 + ".tar")).write_bytes(b"an owner's checked image archive" * 100)
    (settings.DATA_DIR / "secret_key").write_text("k" * 64)
    return {"snapshots": settings.SNAPSHOT_DIR, "images": images}


def test_backup_wipe_restore_gives_back_rows_rankings_snapshots_and_owners(stores, tmp_path):
    ranking, snapshot = site_with_rankings_snapshot_and_owner()
    snapshot.refresh_from_db()
    assert snapshot.status == DatasetSnapshot.Status.DONE and snapshot_path(snapshot).is_file()
    rows = everything()
    files = {name: files_of(root) for name, root in stores.items()}
    assert files["snapshots"] and files["images"]

    call_command("backup", str(tmp_path / "backup"), stdout=io.StringIO(), stderr=io.StringIO())
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert manifest["engine"] == "sqlite" and "database.sqlite3" in manifest["files"]
    assert "files/secret_key" in manifest["files"]

    call_command("flush", "--noinput")
    for root in stores.values():
        shutil.rmtree(root)
    make_method_version("AfterTheBackup")
    assert not RankingSnapshot.objects.exists()

    call_command("restore", str(tmp_path / "backup"), "--noinput", stdout=io.StringIO(), stderr=io.StringIO())
    assert everything() == rows
    assert {name: files_of(root) for name, root in stores.items()} == files
    restored = RankingSnapshot.objects.get(pk=ranking.pk)
    assert restored.report == ranking.report and restored.inputs_hash == ranking.inputs_hash
    restored_snapshot = DatasetSnapshot.objects.get(pk=snapshot.pk)
    assert sha256_of(snapshot_path(restored_snapshot)) == restored_snapshot.sha256
    owner = get_user_model().objects.get(username="owner")
    assert owner.check_password("a-long-password-42") and owner.owner_profile.affiliation == "Lab"


@pytest.mark.parametrize("damage", ["flip a byte", "drop a file", "add a file", "escape the backup"])
def test_a_damaged_backup_is_refused_before_anything_changes(stores, tmp_path, damage):
    site_with_rankings_snapshot_and_owner()
    backup = tmp_path / "backup"
    call_command("backup", str(backup), stdout=io.StringIO(), stderr=io.StringIO())
    archive = next((backup / "files" / "snapshots").rglob("*.tar.gz"))
    if damage == "flip a byte":
        data = bytearray(archive.read_bytes())
        data[len(data) // 2] ^= 0xFF
        archive.write_bytes(bytes(data))
    elif damage == "drop a file":
        archive.unlink()
    elif damage == "add a file":
        (backup / "files" / "images" / "extra.tar").write_bytes(b"x")
    else:
        manifest = json.loads((backup / "manifest.json").read_text())
        manifest["files"]["../outside"] = {"size": 1, "sha256": "0" * 64}
        (backup / "manifest.json").write_text(json.dumps(manifest))
    make_method_version("AfterTheBackup")
    rows = everything()
    files = {name: files_of(root) for name, root in stores.items()}

    with pytest.raises(CommandError, match="damaged backup|outside the backup"):
        call_command("restore", str(backup), "--noinput", stdout=io.StringIO(), stderr=io.StringIO())
    assert everything() == rows
    assert {name: files_of(root) for name, root in stores.items()} == files


def test_backup_refuses_a_directory_that_is_not_empty(stores, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "something").write_text("x")
    with pytest.raises(CommandError, match="not empty"):
        call_command("backup", str(tmp_path / "full"), stdout=io.StringIO(), stderr=io.StringIO())
