"""The gauges behind ``/metrics`` that would cost a scan of a big table, computed by a periodic task.

:func:`compute_gauges` makes one aggregate pass over the predictions (grouped by method version and state,
with the runtime buckets of the successful ones summed in the same pass), a few indexed aggregates over
small tables, and walks the job and image directories; :func:`refresh_gauges` stores the result in one
:class:`GaugeSnapshot` row that every scrape reads. At 2 M predictions the pass is a background task's work
once per ``COMPARNA_METRICS_INTERVAL_S``, never a request's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from comparna.ops.models import GaugeSnapshot

SNAPSHOT_NAME = "metrics"
# Upper bounds (seconds) of the runtime histogram's buckets; +Inf is the count.
RUNTIME_BUCKETS: tuple[float, ...] = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0)
FAILURE_STATES = ("failed", "timeout", "too_long", "unparsable", "infrastructure_error")
FINAL_STATES = ("ok", *FAILURE_STATES)


def _prediction_counts() -> dict:
    """One grouped pass: counts per (method version, state), runtime buckets of ``ok`` runs per version."""
    from predictors.models import MethodVersion, Prediction

    ok = Q(status=Prediction.Status.OK, runtime_s__isnull=False)
    buckets = {f"le{i}": Count("id", filter=ok & Q(runtime_s__lte=b)) for i, b in enumerate(RUNTIME_BUCKETS)}
    rows = Prediction.objects.values("method_version_id", "status").annotate(
        n=Count("id"), runtime_sum=Sum("runtime_s", filter=ok), runtime_n=Count("id", filter=ok), **buckets
    ).order_by()
    versions = {
        v["pk"]: v
        for v in MethodVersion.objects.values("pk", "method__name", "spec__kind")
    }
    by_state: dict[tuple[str, str], int] = {}
    failures: dict[tuple[str, str], int] = {}
    finished: dict[str, int] = {}
    runtime: dict[str, dict] = {}
    for row in rows:
        version = versions.get(row["method_version_id"], {})
        method = version.get("method__name", "?")
        kind = version.get("spec__kind") or "command"
        state = row["status"]
        by_state[(state, kind)] = by_state.get((state, kind), 0) + row["n"]
        if state in FAILURE_STATES:
            failures[(method, state)] = failures.get((method, state), 0) + row["n"]
        if state in FINAL_STATES:
            finished[method] = finished.get(method, 0) + row["n"]
        if row["runtime_n"]:
            h = runtime.setdefault(method, {"buckets": [0] * len(RUNTIME_BUCKETS), "count": 0, "sum": 0.0})
            for i in range(len(RUNTIME_BUCKETS)):
                h["buckets"][i] += row[f"le{i}"]
            h["count"] += row["runtime_n"]
            h["sum"] += float(row["runtime_sum"] or 0.0)
    return {
        "predictions": [[s, k, n] for (s, k), n in sorted(by_state.items())],
        "failures": [[m, s, n] for (m, s), n in sorted(failures.items())],
        "finished": finished,
        "runtime": runtime,
    }


def _ranking_ages(now) -> dict[str, float]:
    """Seconds since the newest stored ranking of each dataset (one indexed aggregate per table)."""
    from comparna.models import RankingSnapshot

    newest = RankingSnapshot.objects.values("dataset__slug").annotate(at=Max("computed_at")).order_by()
    return {row["dataset__slug"]: (now - row["at"]).total_seconds() for row in newest}


def _queue_lengths() -> dict[str, int | None]:
    """Messages waiting in each Celery queue of the broker (None: the broker did not answer)."""
    from celery import current_app

    from predictors.scheduling import LANES  # the prediction queue's lanes (develop, ...)

    names = sorted({"default", "predict", "testrun", "families", *(lane.queue for lane in LANES),
                    *_routed_queues(current_app)})
    lengths: dict[str, int | None] = dict.fromkeys(names)
    try:
        with current_app.connection_for_read(transport_options={"socket_connect_timeout": 5}) as conn:
            channel = conn.default_channel
            for name in names:
                try:
                    lengths[name] = channel.queue_declare(queue=name, passive=True).message_count
                except Exception:  # noqa: BLE001 - a queue never declared holds nothing
                    lengths[name] = 0
                    channel = conn.channel()
    except Exception:  # noqa: BLE001 - the broker is down: reported as unknown lengths
        pass
    return lengths


def _routed_queues(app) -> set[str]:
    return {route["queue"] for route in (app.conf.task_routes or {}).values() if "queue" in route}


def directory_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (links not followed; vanished files skipped)."""
    total = 0
    stack = [path]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(Path(entry.path))
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def _storage_bytes() -> dict[str, int]:
    from django.conf import settings

    from predictors.core.owner_image import archives_dir
    from predictors.core.workspace import jobs_root

    return {
        "jobs": directory_bytes(jobs_root()),
        "images": directory_bytes(archives_dir()),
        "snapshots": directory_bytes(Path(settings.SNAPSHOT_DIR)),
    }


def _pdb_status(now) -> dict:
    from ingest.models import PollRun

    last = PollRun.objects.order_by("-started_at").values("status", "started_at", "finished_at").first()
    done = PollRun.objects.filter(status="done").order_by("-started_at")
    last_ok = done.values_list("finished_at", flat=True).first()
    return {
        "last_status": last["status"] if last else None,
        "last_started": last["started_at"].timestamp() if last else None,
        "last_success": last_ok.timestamp() if last_ok else None,
        "running": PollRun.objects.filter(status="running").count(),
    }


def _blind_status() -> dict:
    from comparna.blind.models import BlindWeek

    weeks = dict(BlindWeek.objects.values_list("status").annotate(n=Count("id")).order_by())
    latest = BlindWeek.objects.order_by("-release_date").values("status", "release_date").first()
    return {
        "weeks": weeks,
        "latest_status": latest["status"] if latest else None,
        "latest_release": latest["release_date"].isoformat() if latest else None,
    }


def compute_gauges(*, previous: dict | None = None, now=None) -> dict:
    """Every background gauge; ``previous`` (the last stored values) gives the finished-per-minute rate."""
    now = now or timezone.now()
    values = _prediction_counts()
    finished_total = sum(values["finished"].values())
    rate = None
    if previous and previous.get("at") is not None:
        minutes = (now.timestamp() - previous["at"]) / 60.0
        if minutes > 0:
            rate = max(0.0, (finished_total - previous.get("finished_total", 0)) / minutes)
    values.update(
        at=now.timestamp(),
        finished_total=finished_total,
        finished_per_minute=rate,
        ranking_age_s=_ranking_ages(now),
        queues=_queue_lengths(),
        bytes=_storage_bytes(),
        pdb=_pdb_status(now),
        blind=_blind_status(),
    )
    return values


def refresh_gauges() -> GaugeSnapshot:
    """Compute the gauges and store them as the one snapshot row read by ``/metrics``."""
    stored = GaugeSnapshot.objects.filter(name=SNAPSHOT_NAME).first()
    started = time.monotonic()
    now = timezone.now()
    values = compute_gauges(previous=stored.values if stored else None, now=now)
    snapshot, _ = GaugeSnapshot.objects.update_or_create(
        name=SNAPSHOT_NAME,
        defaults={"computed_at": now, "values": values, "duration_s": time.monotonic() - started},
    )
    return snapshot
