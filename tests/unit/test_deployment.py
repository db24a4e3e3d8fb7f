"""The deployment contract: README's two commands, .ci/run, docker-compose services."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one():
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```(?:sh|bash)?\n(.*?)```", readme, re.S)
    assert block and readme.index(block.group(0)) < 200, "the commands must open the README"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)


COMPOSE_SECRETS = {"DJANGO_SECRET_KEY": "k" * 40 + "0123456789abcdef", "POSTGRES_PASSWORD": "pw-0123456789"}


def compose_config(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in COMPOSE_SECRETS}
    return subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={**clean, **env},
    )


def test_docker_compose_is_valid_and_has_the_deployment_services():
    proc = compose_config(COMPOSE_SECRETS)
    assert proc.returncode == 0, proc.stderr
    import yaml

    config = yaml.safe_load(proc.stdout)
    services = config["services"]
    assert set(services) == {
        "postgres", "redis", "web", "worker-predict", "worker-default", "worker-families", "beat"
    }
    assert "gunicorn" in json.dumps(services["web"]["command"])
    # The prediction worker also takes the admin's test runs (their own queue: not behind the backlog).
    assert (
        services["worker-predict"]["command"][services["worker-predict"]["command"].index("-Q") + 1]
        == "testrun,predict"
    )
    assert (
        services["worker-default"]["command"][services["worker-default"]["command"].index("-Q") + 1]
        == "default"
    )
    # Family assignment (minutes of cmscan per batch) on its own worker: never ahead of a ranking refresh.
    assert (
        services["worker-families"]["command"][services["worker-families"]["command"].index("-Q") + 1]
        == "families"
    )
    for name in ("web", "worker-predict", "worker-default", "worker-families", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["CELERY_BROKER_URL"].startswith(
            "redis://"
        )


@pytest.mark.parametrize("script", ["scripts/install.sh", "scripts/run.sh", ".ci/run"])
def test_scripts_are_valid_bash(script):
    assert subprocess.run(["bash", "-n", str(REPO / script)]).returncode == 0


def test_docker_compose_has_no_default_secrets():
    text = (REPO / "docker-compose.yml").read_text()
    assert "change-me" not in text and "comparna:comparna@" not in text
    for missing in COMPOSE_SECRETS:
        proc = compose_config({k: v for k, v in COMPOSE_SECRETS.items() if k != missing})
        assert proc.returncode != 0 and f"set {missing}" in proc.stderr, (missing, proc.stderr)


def manage(*args: str, env: dict[str, str], data_dir: Path) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "COMPARNA_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "COMPARNA_DATA_DIR": str(data_dir), **env},
    )


def test_check_deploy_is_clean_under_the_docker_compose_settings(tmp_path):
    import yaml

    config = yaml.safe_load(compose_config(COMPOSE_SECRETS).stdout)
    env = {k: str(v) for k, v in config["services"]["web"]["environment"].items()}
    env.pop("COMPARNA_DATA_DIR")  # /var/lib/comparna in the container; a temporary one here
    proc = manage("check", "--deploy", "--fail-level", "WARNING", env=env, data_dir=tmp_path / "data")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues" in proc.stdout
    # The same check without TLS shows what the compose settings turn on.
    env["COMPARNA_TLS"] = "0"
    proc = manage("check", "--deploy", env=env, data_dir=tmp_path / "data")
    for warning in ("W004", "W008", "W012", "W016"):
        assert warning in proc.stdout + proc.stderr


@pytest.mark.parametrize("key", ["change-me", "comparna-development-key-not-for-production", "short-key"])
def test_weak_secret_keys_are_refused_without_debug(tmp_path, key):
    proc = manage("check", env={"DJANGO_SECRET_KEY": key}, data_dir=tmp_path / "data")
    assert proc.returncode != 0 and "DJANGO_SECRET_KEY is not safe to use" in proc.stderr
    proc = manage("check", env={"DJANGO_SECRET_KEY": key, "DJANGO_DEBUG": "1"}, data_dir=tmp_path / "data")
    assert proc.returncode == 0, proc.stderr


def test_embedded_run_generates_its_key_into_the_private_data_dir(tmp_path):
    data = tmp_path / "data"
    show = ("shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)")
    first = manage(*show, env={}, data_dir=data)
    second = manage(*show, env={}, data_dir=data)
    assert first.returncode == 0, first.stderr
    key = first.stdout.split()[-1]
    assert key == second.stdout.split()[-1] and len(key) >= 50
    assert (data / "secret_key").read_text().strip() == key
    assert (data / "secret_key").stat().st_mode & 0o777 == 0o600
    assert data.stat().st_mode & 0o777 == 0o700
    other = manage(*show, env={}, data_dir=tmp_path / "other")
    assert other.stdout.split()[-1] != key  # never a shared default


TLS_CLIENT = """
from django.contrib.auth.models import User
from django.test import Client
User.objects.create_user("u", password="pw-for-the-test", is_staff=True)
c = Client()
plain = c.get("/")
print("REDIRECT", plain.status_code, plain.headers.get("Location"))
page = c.get("/admin/login/", secure=True)
print("HSTS", page.headers.get("Strict-Transport-Security"))
print("CSP", page.headers.get("Content-Security-Policy"))
csrf = page.cookies["csrftoken"]
print("CSRF", bool(csrf["secure"]), bool(csrf["httponly"]))
c.post("/admin/login/?next=/admin/", {"username": "u", "password": "pw-for-the-test",
       "csrfmiddlewaretoken": csrf.value}, secure=True)
session = c.cookies["sessionid"]
print("SESSION", bool(session["secure"]), bool(session["httponly"]))
"""


@pytest.mark.slow
def test_behind_tls_cookies_are_secure_and_httponly_with_hsts(tmp_path):
    data = tmp_path / "data"
    env = {"COMPARNA_TLS": "1"}
    assert manage("migrate", "--noinput", env=env, data_dir=data).returncode == 0
    proc = manage("shell", "-c", TLS_CLIENT, env=env, data_dir=data)
    assert proc.returncode == 0, proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert out["REDIRECT"].startswith("301 https://")
    assert out["HSTS"].startswith("max-age=31536000") and "includeSubDomains" in out["HSTS"]
    assert "script-src 'self';" in out["CSP"] and "frame-ancestors 'none'" in out["CSP"]
    assert out["CSRF"] == "True True" and out["SESSION"] == "True True"


# -- the image builds what docker-compose.yml runs (no container engine needed: read, not built) ------------
CONTEXT_PROBE = """
import json, sys
from pathlib import Path
from docker.utils.build import exclude_paths
root = Path(sys.argv[1])
lines = [l.strip() for l in (root / ".dockerignore").read_text().splitlines()]
patterns = [l for l in lines if l and not l.startswith("#")]
print(json.dumps(sorted(exclude_paths(str(root), patterns, dockerfile="Dockerfile"))))
"""


def build_context() -> set[str]:
    """The files `docker build .` sends, by docker-py's own .dockerignore matcher (docker-compose's)."""
    proc = subprocess.run(["/usr/bin/python3", "-c", CONTEXT_PROBE, str(REPO)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(json.loads(proc.stdout))


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_build_context_keeps_out_data_dir_virtualenvs_and_git():
    context = build_context()
    kept_out = {".git", ".venv", ".venvs", "var", "staticfiles", ".env"}
    private = [p for p in context if p.split("/")[0] in kept_out or "__pycache__" in p]
    assert private == [], private[:20]
    # everything the repository tracks goes in (code, templates, static, data with its checksums, scripts)
    if (REPO / ".git").exists():
        tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
        missing = [p for p in tracked if (REPO / p).exists() and p not in context]
        assert missing == [], missing[:20]
    for needed in ("manage.py", "requirements.txt", "scripts/install_predictors.sh", "data/SHA256SUMS",
                   "comparna/wsgi.py", "comparna/celery.py"):
        assert needed in context, needed


def test_the_image_provides_what_every_compose_service_runs():
    steps = dockerfile()
    env = " ".join(args for op, args in steps if op == "ENV")
    runs = [args for op, args in steps if op == "RUN"]
    workdir = [args for op, args in steps if op == "WORKDIR"][-1]
    # the virtualenv the requirements go into is the one on PATH (python, celery, gunicorn of every command)
    assert workdir == "/app" and "PATH=/app/.venv/bin:$PATH" in env
    assert any("python3 -m venv .venv" in r and ".venv/bin/pip install" in r and "requirements.txt" in r
               for r in runs)
    requirements = {line.split("==")[0].lower() for line in (REPO / "requirements.txt").read_text().split()}
    config = __import__("yaml").safe_load(compose_config(COMPOSE_SECRETS).stdout)
    for name, service in config["services"].items():
        if "build" not in service:
            continue  # postgres, redis: their own images
        command = service["command"] if isinstance(service["command"], list) else service["command"].split()
        words = " ".join(command).replace("&&", " ").split()
        for program in ("celery", "gunicorn"):
            if program in words:
                assert program in requirements, (name, program)
        if "manage.py" in words:
            assert (REPO / "manage.py").exists()
        # the static files collected at build time are where the running service looks for them
        assert "COMPARNA_STATIC_ROOT" not in service["environment"] and "COMPARNA_STATIC_ROOT" not in env
    assert any("collectstatic" in r for r in runs)
    # the prediction worker has its programs (built by the install script, in the venvs dir it reads) and
    # the privileges the sandbox needs
    assert any("scripts/install_predictors.sh" in r for r in runs) and "COMPARNA_VENVS_DIR=" in env
    assert "bubblewrap" in " ".join(runs)
    predict = config["services"]["worker-predict"]
    assert "SYS_ADMIN" in predict.get("cap_add", [])
    assert "seccomp=unconfined" in predict.get("security_opt", [])
    assert [args for op, args in steps if op == "FROM"] == ["debian:bookworm-slim"]  # Python 3.11, as tested
