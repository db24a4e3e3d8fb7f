"""The deployment contract: README's two commands, .ci/run, docker-compose services."""

from __future__ import annotations

import json
import re
import subprocess
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


def test_docker_compose_is_valid_and_has_the_deployment_services():
    proc = subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    import yaml

    config = yaml.safe_load(proc.stdout)
    services = config["services"]
    assert set(services) == {"postgres", "redis", "web", "worker-predict", "worker-default", "beat"}
    assert "gunicorn" in json.dumps(services["web"]["command"])
    assert (
        services["worker-predict"]["command"][services["worker-predict"]["command"].index("-Q") + 1]
        == "predict"
    )
    assert (
        services["worker-default"]["command"][services["worker-default"]["command"].index("-Q") + 1]
        == "default"
    )
    for name in ("web", "worker-predict", "worker-default", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["CELERY_BROKER_URL"].startswith(
            "redis://"
        )


@pytest.mark.parametrize("script", ["scripts/install.sh", "scripts/run.sh", ".ci/run"])
def test_scripts_are_valid_bash(script):
    assert subprocess.run(["bash", "-n", str(REPO / script)]).returncode == 0
