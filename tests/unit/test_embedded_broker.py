"""The embedded (filesystem) broker writes only under the data directory, nothing in the working one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SEND = """
import django
django.setup()
from comparna.celery import app
app.send_task("comparna.tasks.nothing_really", args=(1,), queue="default")
"""


def test_sent_message_lands_in_data_dir_and_nothing_in_cwd(tmp_path):
    cwd, data = tmp_path / "cwd", tmp_path / "data"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")}
    env.update(DJANGO_SETTINGS_MODULE="comparna.settings", COMPARNA_DATA_DIR=str(data), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", SEND], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert list(cwd.iterdir()) == []
    assert len(list((data / "broker" / "queue").iterdir())) == 1
    assert [p.name for p in (data / "broker" / "control").iterdir()] == ["default.exchange"]
