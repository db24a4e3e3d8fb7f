"""Upgrade: a site made by a previous release (tests/data/upgrade/, built by scripts/make_upgrade_fixture.py
with that commit's own code and migrations) is migrated by this code and keeps every row, and gunicorn
serves its rankings, targets, methods and snapshot.

Every row the old code wrote (datasets, targets, references, methods and versions, predictions, scores,
rankings, snapshots, owner accounts) is compared field by field with what the new code reads after
``migrate`` (new columns may be added, no old value may change); the snapshot archive served is the one
whose sha256 its row recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
import requests

from tests.e2e.stack import REPO, VENV_BIN, free_port, start_service, wait_for

pytestmark = pytest.mark.timeout(600)

FIXTURE = REPO / "tests" / "data" / "upgrade" / "previous-release.tar.gz"
DUMP = r"""
import json
import django
django.setup()
from django.contrib.auth import get_user_model
from comparna.models import Dataset, Subset, Target, ReferenceStructure, Score, RankingSnapshot
from comparna.owners.models import OwnerProfile
from comparna.snapshots.models import DatasetSnapshot
from predictors.models import Method, MethodVersion, Prediction
MODELS = {
    "dataset": Dataset, "subset": Subset, "target": Target, "reference": ReferenceStructure,
    "method": Method, "method_version": MethodVersion, "prediction": Prediction, "score": Score,
    "ranking": RankingSnapshot, "snapshot": DatasetSnapshot, "user": get_user_model(), "owner": OwnerProfile,
}
rows = {name: list(model.objects.order_by("pk").values()) for name, model in MODELS.items()}
owner = get_user_model().objects.get(username="owner")
print(json.dumps({"rows": rows, "password_ok": owner.check_password("upgrade-password-42")}, default=str))
"""


def test_a_previous_release_database_upgrades_with_everything_kept_and_served():
    work = Path(tempfile.mkdtemp(prefix="comparna-upgrade-"))
    gunicorn = None
    try:
        with tarfile.open(FIXTURE) as tar:
            tar.extractall(work)  # our own committed fixture
        expected = json.loads((work / "expected.json").read_text())
        env = {
            **os.environ,
            "COMPARNA_DATA_DIR": str(work),
            "COMPARNA_SNAPSHOT_DIR": str(work / "snapshots"),
            "DJANGO_SETTINGS_MODULE": "comparna.settings",
            "PYTHONPATH": str(REPO),
        }
        env.pop("DATABASE_URL", None)

        def run(*argv):
            proc = subprocess.run(
                [sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
            )
            assert proc.returncode == 0, proc.stderr[-4000:]
            return proc.stdout

        plan = run("manage.py", "migrate", "--plan")
        assert "No planned migration operations" not in plan, "the fixture is not older than this code"
        run("manage.py", "migrate", "--noinput")
        assert "No planned migration operations" in run("manage.py", "migrate", "--plan")

        after = json.loads(run("-c", DUMP).strip().splitlines()[-1])
        assert after["password_ok"]
        for model, old_rows in expected["rows"].items():
            new_rows = {row["id"]: row for row in after["rows"][model]}
            assert set(new_rows) == {row["id"] for row in old_rows}, model
            for old in old_rows:
                new = new_rows[old["id"]]
                changed = {k: (v, new.get(k)) for k, v in old.items() if new.get(k) != v}
                assert not changed, f"{model} {old['id']}: {changed}"

        port = free_port()
        gunicorn = start_service(
            "gunicorn",
            [str(VENV_BIN / "gunicorn"), "comparna.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1"],
            env=env,
            logdir=work,
        )
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: requests.get(url + "/healthz", timeout=5).ok, timeout=60, what="gunicorn")
        dataset = expected["rows"]["dataset"][0]["slug"]
        ranking = expected["rows"]["ranking"][0]
        subset = next(s for s in expected["rows"]["subset"] if s["id"] == ranking["subset_id"])["slug"]
        methods = [m["name"] for m in expected["rows"]["method"]]
        page = requests.get(f"{url}/rankings/{dataset}/{subset}/{ranking['definition']}/", timeout=60)
        assert page.status_code == 200 and all(name in page.text for name in methods), gunicorn.tail()
        home = requests.get(url + "/", timeout=60)
        assert home.status_code == 200 and all(name in home.text for name in methods)
        target = expected["rows"]["target"][0]
        assert requests.get(f"{url}/targets/{target['id']}/", timeout=60).status_code == 200
        method = expected["rows"]["method"][0]
        assert requests.get(f"{url}/methods/{method['id']}/", timeout=60).status_code == 200
        snapshot = expected["rows"]["snapshot"][0]
        assert requests.get(f"{url}/snapshots/{dataset}/{snapshot['number']}/", timeout=60).status_code == 200
        archive = requests.get(f"{url}/snapshots/{dataset}/{snapshot['number']}/download", timeout=60)
        assert archive.status_code == 200
        assert hashlib.sha256(archive.content).hexdigest() == snapshot["sha256"]
    finally:
        if gunicorn is not None:
            gunicorn.stop()
        shutil.rmtree(work, ignore_errors=True)
