"""``/metrics``: the Prometheus text exposition of the stored gauges plus the heartbeat rows.

A scrape reads one :class:`GaugeSnapshot` row and the heartbeat rows (one per process): its cost never grows
with the data. The metric names are listed in docs/operations.md.
"""

from __future__ import annotations

import ipaddress
import os
import secrets

from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

from comparna.ops.gauges import RUNTIME_BUCKETS, SNAPSHOT_NAME
from comparna.ops.models import GaugeSnapshot, Heartbeat

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


# The help text of every metric (docs/operations.md lists the same names).
HELP = {
    "comparna_metrics_computed_timestamp_seconds": "When the stored gauges were computed.",
    "comparna_metrics_compute_seconds": "How long computing the stored gauges took.",
    "comparna_predictions": "Predictions by state and method kind.",
    "comparna_predictions_finished": "Predictions in a final state (ok or a failure), per method.",
    "comparna_predictions_finished_per_minute": "Predictions finished a minute since the last computation.",
    "comparna_prediction_failures": (
        "Failed, timed-out, too long, unparsable and infrastructure-error predictions per method."
    ),
    "comparna_queue_messages": "Messages waiting in each Celery queue of the broker.",
    "comparna_ranking_age_seconds": "Age of the newest stored ranking of each dataset.",
    "comparna_storage_bytes": ("Bytes in the job directories, the image store and the snapshot archives."),
    "comparna_heartbeat_age_seconds": "Seconds since each worker or beat last beat.",
    "comparna_queue_workers": "Workers of each queue that beat within the readiness window.",
    "comparna_pdb_poll_last_ok": "1 when the latest PDB poll finished, 0 when it failed or runs.",
    "comparna_pdb_poll_last_success_timestamp_seconds": "End of the latest successful PDB poll.",
    "comparna_pdb_polls_running": "PDB polls recorded as running.",
    "comparna_blind_weeks": "Blind-track weeks by state.",
    "comparna_blind_latest_week_info": "The latest blind week's state (value 1).",
    "comparna_prediction_runtime_seconds": "Runtime of successful predictions per method.",
}


def _gauge(name: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, HELP[name], labels=labels)


class StoredCollector:
    """Builds the metric families from the stored snapshot and the heartbeats at collection time."""

    def __init__(self, *, snapshot: GaugeSnapshot | None, heartbeats: list[dict], now) -> None:
        self.snapshot, self.heartbeats, self.now = snapshot, heartbeats, now

    def collect(self):
        yield from self._heartbeats()
        if self.snapshot is None:
            return
        v = self.snapshot.values
        g = _gauge("comparna_metrics_computed_timestamp_seconds")
        g.add_metric([], self.snapshot.computed_at.timestamp())
        yield g
        g = _gauge("comparna_metrics_compute_seconds")
        g.add_metric([], self.snapshot.duration_s)
        yield g
        g = _gauge("comparna_predictions", ["state", "kind"])
        for state, kind, n in v.get("predictions", []):
            g.add_metric([state, kind], n)
        yield g
        g = _gauge("comparna_predictions_finished", ["method"])
        for method, n in sorted(v.get("finished", {}).items()):
            g.add_metric([method], n)
        yield g
        g = _gauge("comparna_predictions_finished_per_minute")
        if v.get("finished_per_minute") is not None:
            g.add_metric([], v["finished_per_minute"])
        yield g
        g = _gauge("comparna_prediction_failures", ["method", "state"])
        for method, state, n in v.get("failures", []):
            g.add_metric([method, state], n)
        yield g
        h = HistogramMetricFamily(
            "comparna_prediction_runtime_seconds",
            HELP["comparna_prediction_runtime_seconds"],
            labels=["method"],
        )
        for method, data in sorted(v.get("runtime", {}).items()):
            bounds = [str(b) for b in RUNTIME_BUCKETS] + ["+Inf"]
            counts = [*data["buckets"], data["count"]]
            h.add_metric([method], list(zip(bounds, counts, strict=True)), data["sum"])
        yield h
        g = _gauge("comparna_queue_messages", ["queue"])
        for queue, n in sorted(v.get("queues", {}).items()):
            if n is not None:
                g.add_metric([queue], n)
        yield g
        g = _gauge("comparna_ranking_age_seconds", ["dataset"])
        for dataset, age in sorted(v.get("ranking_age_s", {}).items()):
            g.add_metric([dataset], age)
        yield g
        g = _gauge("comparna_storage_bytes", ["store"])
        for store, n in sorted(v.get("bytes", {}).items()):
            g.add_metric([store], n)
        yield g
        yield from self._pdb(v.get("pdb", {}))
        yield from self._blind(v.get("blind", {}))

    def _heartbeats(self):
        g = _gauge("comparna_heartbeat_age_seconds", ["role", "name"])
        q = _gauge("comparna_queue_workers", ["queue"])
        stale = float(os.environ.get("COMPARNA_WORKER_STALE_S", "300"))
        per_queue: dict[str, int] = {}
        for hb in self.heartbeats:
            age = (self.now - hb["seen_at"]).total_seconds()
            g.add_metric([hb["role"], hb["name"]], age)
            for queue in hb["queues"] or ():
                per_queue[queue] = per_queue.get(queue, 0) + (1 if age <= stale else 0)
        for queue, n in sorted(per_queue.items()):
            q.add_metric([queue], n)
        yield g
        yield q

    def _pdb(self, pdb: dict):
        status = _gauge("comparna_pdb_poll_last_ok")
        if pdb.get("last_status"):
            status.add_metric([], 1.0 if pdb["last_status"] == "done" else 0.0)
        yield status
        success = _gauge("comparna_pdb_poll_last_success_timestamp_seconds")
        if pdb.get("last_success") is not None:
            success.add_metric([], pdb["last_success"])
        yield success
        running = _gauge("comparna_pdb_polls_running")
        running.add_metric([], pdb.get("running", 0))
        yield running

    def _blind(self, blind: dict):
        g = _gauge("comparna_blind_weeks", ["state"])
        for state, n in sorted(blind.get("weeks", {}).items()):
            g.add_metric([state], n)
        yield g
        latest = _gauge("comparna_blind_latest_week_info", ["state", "release_date"])
        if blind.get("latest_status"):
            latest.add_metric([blind["latest_status"], blind["latest_release"]], 1)
        yield latest


def render_metrics() -> bytes:
    """The exposition text: one snapshot row, the heartbeat rows, nothing else from the database."""
    snapshot = GaugeSnapshot.objects.filter(name=SNAPSHOT_NAME).first()
    heartbeats = list(Heartbeat.objects.values("role", "name", "queues", "seen_at"))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoredCollector(snapshot=snapshot, heartbeats=heartbeats, now=timezone.now()))
    return generate_latest(registry)


def metrics_allowed(*, authorization: str, remote_addr: str) -> bool:
    """A scrape is allowed with ``Authorization: Bearer <COMPARNA_METRICS_TOKEN>`` or from a network of
    ``COMPARNA_METRICS_ALLOWED_NETWORKS`` (default loopback only; empty: none)."""
    token = os.environ.get("COMPARNA_METRICS_TOKEN", "")
    scheme, _, given = authorization.partition(" ")
    given_ok = secrets.compare_digest(given.strip().encode(), token.encode())
    if token and scheme.lower() == "bearer" and given_ok:
        return True
    networks = os.environ.get("COMPARNA_METRICS_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
    try:
        address = ipaddress.ip_address(remote_addr)
    except ValueError:
        return False
    for network in networks.split(","):
        network = network.strip()
        if not network:
            continue
        try:
            if address in ipaddress.ip_network(network, strict=False):
                return True
        except ValueError:
            continue
    return False
