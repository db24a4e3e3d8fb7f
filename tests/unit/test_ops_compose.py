"""docker-compose's healthchecks use the operations endpoints and commands (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_every_app_service_has_a_healthcheck_of_its_own_kind():
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    tests = {name: " ".join(svc.get("healthcheck", {}).get("test", [])) for name, svc in services.items()}
    assert "/healthz" in tests["web"]
    for name in ("worker-predict", "worker-default", "worker-families"):
        queue = name.removeprefix("worker-")
        assert f"manage.py healthcheck --worker {queue}@$$(hostname)" in tests[name]
        assert f"{queue}@%h" in services[name]["command"]  # the name the worker's heartbeat row carries
    assert "healthcheck --beat" in tests["beat"]


def test_the_first_start_asks_for_the_pdb_set():
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    assert "manage.py start_pdb_set" in " ".join(services["web"]["command"])
    assert "manage.py start_pdb_set" in (REPO / "scripts" / "run.sh").read_text()


def test_docs_and_dashboard_name_exactly_the_exported_metrics():
    import json
    import re

    from comparna.ops.metrics import HELP

    docs = (REPO / "docs" / "operations.md").read_text()
    documented = set(re.findall(r"^\| `(comparna_[a-z_]+)` \|", docs, re.M))
    assert documented == set(HELP)
    dashboard = json.loads((REPO / "docs" / "grafana-comparna.json").read_text())
    used = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"comparna_[a-z_]+", target["expr"])
    }
    histogram = {f"{h}_{s}" for h in HELP for s in ("bucket", "sum", "count")}
    assert used <= set(HELP) | histogram, used - set(HELP) - histogram
