"""Health, readiness and metrics of the real stack: PostgreSQL, Redis, three Celery workers, beat, gunicorn.

/readyz turns 200 only once every worker (heartbeats written by the workers' own timers) and beat (its
scheduler's ticks) have beaten, and 503 again after a worker is stopped; /metrics (gauges computed by the
periodic task that beat sends) is scraped over HTTP with a Bearer token and parsed by prometheus-client's
parser; the workers' log lines are JSON.
"""

from __future__ import annotations

import json

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.stack import production_stack, wait_for

pytestmark = pytest.mark.timeout(600)

TOKEN = "ops-stack-token"
# Since e7101ed /readyz gives its details only to the /metrics allow-list (its token or allowed networks,
# issue 36); anyone else gets {"ok": ...}. The checks are read with the token; an anonymous probe, the status.
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_readyz_metrics_and_json_logs_on_the_stack():
    env = {
        "COMPARNA_HEARTBEAT_S": "1",
        "COMPARNA_WORKER_STALE_S": "8",
        "COMPARNA_BEAT_STALE_S": "8",
        "COMPARNA_METRICS_INTERVAL_S": "3",
        "COMPARNA_MIN_FREE_MB": "1",
        "COMPARNA_METRICS_TOKEN": TOKEN,
        "COMPARNA_METRICS_ALLOWED_NETWORKS": "",
        "COMPARNA_LOG_FORMAT": "json",
    }
    with production_stack(env) as stack:
        url = stack.start_web()
        anonymous = requests.get(url + "/readyz", timeout=10)
        assert anonymous.status_code == 503 and anonymous.json() == {"ok": False}
        not_ready = requests.get(url + "/readyz", headers=AUTH, timeout=10)
        assert not_ready.status_code == 503
        assert not_ready.json()["checks"]["database"]["ok"] and not_ready.json()["checks"]["broker"]["ok"]

        stack.start_worker("testrun,predict", name="predict")
        stack.start_worker("default", name="default")
        families = stack.start_worker("families", name="families")
        stack.start_beat()
        try:
            ready = wait_for(
                lambda: _readyz(url, 200),
                timeout=180,
                interval=1,
                what="/readyz 200",
            )
            body = ready
            assert body["checks"]["workers"]["missing"] == [] and body["checks"]["beat"]["ok"]
            anonymous = requests.get(url + "/readyz", timeout=10)
            assert anonymous.status_code == 200 and anonymous.json() == {"ok": True}
            for node in ("predict", "default", "families"):
                stack.manage("healthcheck", "--worker", f"{node}@{_hostname()}")
            stack.manage("healthcheck", "--beat")

            assert requests.get(url + "/metrics", timeout=10).status_code == 403

            def scraped():
                text = requests.get(url + "/metrics", headers=AUTH, timeout=10).text
                families = {f.name: f for f in text_string_to_metric_families(text)}
                stamp = families.get("comparna_metrics_computed_timestamp_seconds")
                return families if stamp is not None and stamp.samples else None

            metrics = wait_for(scraped, timeout=120, interval=1, what="the gauges computed by beat's task")
            queues = {s.labels["queue"]: s.value for s in metrics["comparna_queue_messages"].samples}
            assert set(queues) >= {"predict", "testrun", "default", "families"}
            workers = {s.labels["queue"]: s.value for s in metrics["comparna_queue_workers"].samples}
            # a predict worker also takes the development lane 'develop' (56f57fe), a testrun worker the
            # advisor's 'advice' (d93b877)
            assert workers == {
                "predict": 1, "develop": 1, "testrun": 1, "advice": 1, "default": 1, "families": 1
            }
            ages = {s.labels["name"] for s in metrics["comparna_heartbeat_age_seconds"].samples}
            assert any(name.startswith("beat@") for name in ages)
        finally:
            logs = stack.logs()

        families.stop()
        gone = wait_for(
            lambda: _readyz(url, 503),
            timeout=60,
            interval=1,
            what="/readyz 503 after the families worker stopped",
        )
        assert gone["checks"]["workers"]["missing"] == ["families"], logs
        proc = stack.manage("healthcheck", "--worker", f"families@{_hostname()}", check=False)
        assert proc.returncode != 0

        # every line the default worker wrote through logging is a JSON object
        lines = [ln for ln in stack.services["default"].log.read_text().splitlines() if ln.startswith("{")]
        records = [json.loads(ln) for ln in lines]
        assert any(r.get("task") == "comparna.ops.tasks.refresh_gauges_task" for r in records), lines[-20:]


def _readyz(url: str, status: int) -> dict | None:
    """/readyz's body, with its details (the metrics token), when it answers ``status`` (a 503 Response is
    falsy: return its JSON instead)."""
    response = requests.get(url + "/readyz", headers=AUTH, timeout=10)
    return response.json() if response.status_code == status else None


def _hostname() -> str:
    import socket

    return socket.gethostname()
