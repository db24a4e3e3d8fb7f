"""The runtime set alone runs CompaRNA (issue 39): ``requirements.txt`` installed into an empty virtualenv (no
pip, no system site-packages, no test tool), then ``manage.py check --deploy`` and a page served by gunicorn.

The pinned set is installed as it stands (``--no-deps``: it pins its whole closure, which ``pip check`` then
proves, and tests/unit/test_requirements.py checks against the packages' metadata) and without compiling
byte code: 15-20 s from pip's cache and the local wheels instead of 50-100 s with the resolver and
compilation (load 4-6).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.e2e.stack import REPO, Service, free_port, start_service, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Import names of the test and lint tools; none may be importable in the runtime virtualenv.
TEST_MODULES = ["pytest", "pytest_django", "xdist", "playwright", "schemathesis", "hypothesis", "ruff",
                "importlinter"]


def run(argv: list[str], *, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    output = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{argv[:4]} exit {proc.returncode}:\n{output}"
    return proc


def test_the_runtime_set_alone_runs_the_site(tmp_path):
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)])
    # this suite's own pip installs into the new environment (it has none of its own)
    pip = [sys.executable, "-m", "pip", "--python", python]
    run([*pip, "install", "-q", "--no-deps", "--no-compile", "--disable-pip-version-check",
         "-r", str(REPO / "requirements.txt")])
    assert "No broken requirements found" in run([*pip, "check"]).stdout
    installed = run([python, "-c", "import importlib.metadata as m; print(*(d.metadata['Name'].lower() "
                                   "for d in m.distributions()))"]).stdout.split()
    assert {"django", "celery", "gunicorn", "psycopg"} <= set(installed)
    assert {"pytest", "playwright", "schemathesis", "hypothesis", "ruff", "pip"} & set(installed) == set()
    probe = ("import importlib.util, sys; found = [m for m in sys.argv[1:] if importlib.util.find_spec(m)];"
             " print('FOUND', *found)")
    assert run([python, "-c", probe, *TEST_MODULES]).stdout.split() == ["FOUND"]

    # the deployment's settings (docker-compose: TLS behind a proxy, a real key), on SQLite here
    data = tmp_path / "data"
    env = {
        **{k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "COMPARNA_", "DATABASE_", "CELERY_", "VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_CSRF_TRUSTED_ORIGINS": "https://localhost",
        "COMPARNA_TLS": "1",
        "COMPARNA_DATA_DIR": str(data),
        "COMPARNA_STATIC_ROOT": str(tmp_path / "static"),
    }
    # check --deploy, then what a deployment runs before serving: one Django start for the three (each start
    # imports the application: 3-4 s idle, 12-20 s at load 8)
    steps = ("from django.core.management import call_command as manage;"
             " manage('check', '--deploy', '--fail-level', 'WARNING');"
             " manage('migrate', '--noinput', '-v', '0'); manage('collectstatic', '--noinput', '-v', '0')")
    check = run([python, "manage.py", "shell", "-c", steps], env=env)
    assert "System check identified no issues" in check.stdout

    port = free_port()
    web: Service = start_service(
        "gunicorn", [str(venv / "bin" / "gunicorn"), "comparna.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1"],
        env=env, logdir=tmp_path,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        proxied = {"X-Forwarded-Proto": "https"}  # what the TLS-terminating proxy sets
        wait_for(lambda: requests.get(url + "/healthz", timeout=5).ok, timeout=60, what="gunicorn")
        page = requests.get(url + "/about/", headers=proxied, timeout=30)
        assert page.status_code == 200, web.tail()
        assert "CompaRNA" in page.text and "Strict-Transport-Security" in page.headers
        # without the proxy's header, plain HTTP is sent to HTTPS
        assert requests.get(url + "/about/", allow_redirects=False, timeout=30).status_code == 301
        # a static file collected by the runtime set (hashed name, compressed copies) is served by WhiteNoise
        assert any(Path(tmp_path / "static").rglob("*.br"))
    finally:
        web.stop()
