"""/healthz, /readyz and /metrics through Django's test client (real workers: tests/e2e/test_ops_stack.py).

/readyz answers 503 until a worker of every queue and beat have beaten recently; /metrics is parsed by
prometheus-client's own parser and its values are checked against the rows; its cost is the same with 0 and
with many predictions; a scrape needs a token or an allowed network.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from comparna.ops.gauges import refresh_gauges
from comparna.ops.heartbeats import record_heartbeat
from comparna.ops.models import Heartbeat
from predictors.models import Prediction
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db

QUEUES = ("predict", "testrun", "default", "families")


@pytest.fixture(autouse=True)
def ops_env(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPARNA_MIN_FREE_MB", "1")
    monkeypatch.setenv("COMPARNA_JOBS_DIR", str(tmp_path / "jobs"))
    monkeypatch.setenv("COMPARNA_IMAGES_DIR", str(tmp_path / "images"))
    (tmp_path / "images").mkdir()


def beat_everything(*, ago_s: float = 0.0) -> None:
    started = timezone.now()
    record_heartbeat(role="worker", name="predict@h", queues=["predict", "testrun"], started_at=started)
    record_heartbeat(role="worker", name="default@h", queues=["default"], started_at=started)
    record_heartbeat(role="worker", name="families@h", queues=["families"], started_at=started)
    record_heartbeat(role="beat", name="beat@h", queues=[], started_at=started)
    if ago_s:
        Heartbeat.objects.update(seen_at=timezone.now() - timedelta(seconds=ago_s))


def test_healthz_answers_without_the_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"ok": True}


def test_readyz_needs_a_worker_of_each_queue_and_beat():
    response = Client().get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] and checks["broker"]["ok"] and checks["disk"]["ok"]
    assert checks["workers"]["missing"] == sorted(QUEUES) and not checks["beat"]["ok"]

    beat_everything()
    response = Client().get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["workers"]["queues"] == dict.fromkeys(QUEUES, 1)

    # the families worker stops beating: not ready again once its beat is older than the window
    Heartbeat.objects.filter(name="families@h").update(seen_at=timezone.now() - timedelta(minutes=6))
    response = Client().get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["workers"]["missing"] == ["families"]


def test_readyz_reports_low_disk_and_a_dead_broker(settings, monkeypatch):
    beat_everything()
    monkeypatch.setenv("COMPARNA_MIN_FREE_MB", str(10**12))
    body = Client().get("/readyz").json()
    assert not body["ok"] and set(body["checks"]["disk"]["low"]) == {"data", "jobs", "images"}
    monkeypatch.setenv("COMPARNA_MIN_FREE_MB", "1")
    from celery import current_app

    monkeypatch.setattr(current_app.conf, "broker_url", "redis://127.0.0.1:9/0")  # nothing listens on port 9
    response = Client().get("/readyz")
    assert response.status_code == 503 and not response.json()["checks"]["broker"]["ok"]


def test_healthcheck_command_for_a_worker_and_beat():
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError):
        call_command("healthcheck", "--worker", "predict@h")
    beat_everything()
    call_command("healthcheck", "--worker", "predict@h")
    call_command("healthcheck", "--beat")
    beat_everything(ago_s=600)
    with pytest.raises(CommandError):
        call_command("healthcheck", "--worker", "predict@h")
    with pytest.raises(CommandError):
        call_command("healthcheck", "--beat")


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _samples(family, name=None) -> dict:
    return {
        tuple(sorted(s.labels.items())): s.value for s in family.samples if name is None or s.name == name
    }


def test_metrics_parse_and_match_the_rows(django_assert_max_num_queries):
    version = make_method_version("OpsFold")
    targets = [make_target("GGGAAACCC", "(((...)))") for _ in range(5)]
    for target in targets[:3]:
        p = make_prediction(version, target, "(((...)))")
        Prediction.objects.filter(pk=p.pk).update(runtime_s=0.3)
    p = make_prediction(version, targets[3], "(((...)))")
    Prediction.objects.filter(pk=p.pk).update(status=Prediction.Status.TIMEOUT, runtime_s=99)
    p = make_prediction(version, targets[4], "(((...)))")
    Prediction.objects.filter(pk=p.pk).update(status=Prediction.Status.QUEUED, pairs="")
    beat_everything()
    refresh_gauges()

    with django_assert_max_num_queries(3):
        response = Client().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    families = _families(response.content.decode())

    states = _samples(families["comparna_predictions"])
    assert states[(("kind", "command"), ("state", "ok"))] == 3
    assert states[(("kind", "command"), ("state", "timeout"))] == 1
    assert states[(("kind", "command"), ("state", "queued"))] == 1
    failures = _samples(families["comparna_prediction_failures"])
    assert failures == {(("method", "OpsFold"), ("state", "timeout")): 1}
    runtime = families["comparna_prediction_runtime_seconds"]
    assert runtime.type == "histogram"
    buckets = _samples(runtime, "comparna_prediction_runtime_seconds_bucket")
    assert buckets[(("le", "0.1"), ("method", "OpsFold"))] == 0
    assert buckets[(("le", "0.5"), ("method", "OpsFold"))] == 3
    assert buckets[(("le", "+Inf"), ("method", "OpsFold"))] == 3
    sums = _samples(runtime, "comparna_prediction_runtime_seconds_sum")
    assert sums[(("method", "OpsFold"),)] == pytest.approx(0.9)
    assert _samples(families["comparna_predictions_finished"]) == {(("method", "OpsFold"),): 4}
    workers = _samples(families["comparna_queue_workers"])
    assert workers == {(("queue", q),): 1 for q in QUEUES}
    queues = _samples(families["comparna_queue_messages"])
    assert {dict(k)["queue"] for k in queues} >= set(QUEUES)
    stores = {dict(k)["store"] for k in _samples(families["comparna_storage_bytes"])}
    assert stores == {"jobs", "images", "snapshots"}
    for name in ("comparna_ranking_age_seconds", "comparna_pdb_poll_last_ok", "comparna_blind_weeks"):
        assert name in families


def test_a_scrape_costs_the_same_with_many_predictions(django_assert_num_queries):
    refresh_gauges()
    with django_assert_num_queries(2):
        Client().get("/metrics")
    version = make_method_version("ManyFold")
    target = make_target("GGGAAACCC", "(((...)))")
    Prediction.objects.bulk_create(
        [Prediction(method_version=version, target=make_target("GGGAAACCC", "(((...)))")) for _ in range(200)]
    )
    make_prediction(version, target, "(((...)))")
    refresh_gauges()
    with django_assert_num_queries(2):
        response = Client().get("/metrics")
    states = _samples(_families(response.content.decode())["comparna_predictions"])
    assert states[(("kind", "command"), ("state", "queued"))] == 200


def test_finished_per_minute_comes_from_two_computations():
    version = make_method_version("RateFold")
    refresh_gauges()
    from comparna.ops.models import GaugeSnapshot

    snap = GaugeSnapshot.objects.get()
    snap.values["at"] -= 120  # the previous computation two minutes ago
    snap.save()
    for _ in range(6):
        make_prediction(version, make_target("GGGAAACCC", "(((...)))"), "(((...)))")
    rate = refresh_gauges().values["finished_per_minute"]
    assert rate == pytest.approx(3.0, rel=0.05)


def test_metrics_need_a_token_or_an_allowed_network(monkeypatch):
    monkeypatch.setenv("COMPARNA_METRICS_ALLOWED_NETWORKS", "10.0.0.0/8")
    monkeypatch.setenv("COMPARNA_METRICS_TOKEN", "s3cret-token")
    client = Client()  # REMOTE_ADDR 127.0.0.1: outside 10.0.0.0/8
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    monkeypatch.setenv("COMPARNA_METRICS_TOKEN", "")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_probes_on_the_internal_address_behind_tls(settings):
    """A probe reaches the container as http://<internal ip>:8000: no HTTPS redirect, no host refusal."""
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["comparna.example.org"]
    client = Client()
    assert client.get("/healthz", HTTP_HOST="172.18.0.5:8000").status_code == 200
    assert client.get("/readyz", HTTP_HOST="172.18.0.5:8000").status_code == 503  # no workers: not a 301/400
    assert client.get("/metrics", HTTP_HOST="172.18.0.5:8000").status_code == 200
    assert client.get("/", HTTP_HOST="172.18.0.5:8000").status_code == 400  # the site itself keeps its checks
