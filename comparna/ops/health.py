"""Liveness and readiness checks (``/healthz``, ``/readyz``, ``manage.py healthcheck``).

Every check costs the same whatever the size of the data: one ``SELECT 1``, one broker connection, one read
of the heartbeat rows (one per process), two ``statvfs`` calls.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from comparna.ops.models import Heartbeat


@dataclass(frozen=True)
class ReadinessPolicy:
    """What ``/readyz`` requires; read from the environment (docs/operations.md)."""

    queues: tuple[str, ...] = ("predict", "testrun", "default", "families")
    worker_stale_s: float = 300.0
    beat_stale_s: float = 300.0
    min_free_mb: float = 1024.0
    broker_timeout_s: float = 2.0
    dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def from_environment(cls) -> ReadinessPolicy:
        from predictors.core.owner_image import archives_dir
        from predictors.core.workspace import jobs_root

        queues = os.environ.get("COMPARNA_READY_QUEUES", ",".join(cls.queues))
        return cls(
            queues=tuple(q.strip() for q in queues.split(",") if q.strip()),
            worker_stale_s=float(os.environ.get("COMPARNA_WORKER_STALE_S", "300")),
            beat_stale_s=float(os.environ.get("COMPARNA_BEAT_STALE_S", "300")),
            min_free_mb=float(os.environ.get("COMPARNA_MIN_FREE_MB", "1024")),
            broker_timeout_s=float(os.environ.get("COMPARNA_BROKER_TIMEOUT_S", "2")),
            dirs={"data": Path(settings.DATA_DIR), "jobs": jobs_root(), "images": archives_dir()},
        )


def check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - reported as the check's outcome
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "vendor": connection.vendor}


def check_broker(*, timeout_s: float) -> dict:
    """Open (and close) one connection to the Celery broker, giving up after ``timeout_s``."""
    from celery import current_app

    options = {"socket_connect_timeout": timeout_s, "socket_timeout": timeout_s}
    try:
        with current_app.connection_for_write(transport_options=options) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout_s)
            transport = conn.transport_cls
    except Exception as exc:  # noqa: BLE001 - reported as the check's outcome
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "transport": str(transport)}


def check_workers(*, queues: tuple[str, ...], stale_s: float, now: datetime) -> dict:
    """At least one worker of each queue beat within ``stale_s`` seconds."""
    cutoff = now - timedelta(seconds=stale_s)
    seen: dict[str, list[str]] = {q: [] for q in queues}
    for name, worker_queues in Heartbeat.objects.filter(
        role=Heartbeat.Role.WORKER, seen_at__gte=cutoff
    ).values_list("name", "queues"):
        for queue in worker_queues or ():
            if queue in seen:
                seen[queue].append(name)
    missing = sorted(q for q, names in seen.items() if not names)
    return {"ok": not missing, "queues": {q: len(names) for q, names in seen.items()}, "missing": missing}


def check_beat(*, stale_s: float, now: datetime) -> dict:
    beats = Heartbeat.objects.filter(role=Heartbeat.Role.BEAT).order_by("-seen_at")
    last = beats.values_list("seen_at", flat=True).first()
    if last is None:
        return {"ok": False, "last_tick": None}
    age = max(0.0, (now - last).total_seconds())
    return {"ok": age <= stale_s, "last_tick": last.isoformat(), "age_s": round(age, 1)}


def check_disk(*, dirs: dict[str, Path], min_free_mb: float) -> dict:
    free: dict[str, float | None] = {}
    for label, path in dirs.items():
        # a directory not made yet (no image uploaded) will live on its nearest existing parent's filesystem
        while not path.exists() and path.parent != path:
            path = path.parent
        try:
            free[label] = round(shutil.disk_usage(path).free / 2**20, 1)
        except OSError:
            free[label] = None
    low = sorted(label for label, mb in free.items() if mb is None or mb < min_free_mb)
    return {"ok": not low, "free_mb": free, "min_free_mb": min_free_mb, "low": low}


def readiness(*, policy: ReadinessPolicy | None = None, now: datetime | None = None) -> dict:
    """Every readiness check and the overall verdict ``ok``."""
    policy = policy or ReadinessPolicy.from_environment()
    now = now or timezone.now()
    database = check_database()
    checks = {"database": database, "broker": check_broker(timeout_s=policy.broker_timeout_s)}
    if database["ok"]:
        checks["workers"] = check_workers(queues=policy.queues, stale_s=policy.worker_stale_s, now=now)
        checks["beat"] = check_beat(stale_s=policy.beat_stale_s, now=now)
    else:
        checks["workers"] = checks["beat"] = {"ok": False, "error": "database unavailable"}
    checks["disk"] = check_disk(dirs=policy.dirs, min_free_mb=policy.min_free_mb)
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks, "time": now.isoformat()}


def worker_alive(*, name: str, stale_s: float, now: datetime | None = None) -> bool:
    """The worker ``name`` (e.g. ``predict@host``) beat within ``stale_s`` seconds."""
    now = now or timezone.now()
    return Heartbeat.objects.filter(
        role=Heartbeat.Role.WORKER, name=name, seen_at__gte=now - timedelta(seconds=stale_s)
    ).exists()
