"""Heartbeats: each Celery worker and beat write a row on a timer (``/readyz``, ``manage.py healthcheck``).

Workers load :class:`HeartbeatStep` by name (``comparna/celery.py``) and beat runs
:class:`HeartbeatScheduler` (``CELERY_BEAT_SCHEDULER``): a row per process, so a worker whose event loop or
database is stuck stops beating and the checks see it, which a ping of the broker would not.
"""

from __future__ import annotations

import logging
import os
import socket
import time

from celery import bootsteps
from celery.beat import PersistentScheduler
from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)


def heartbeat_interval_s() -> float:
    """Seconds between two beats of one process (``COMPARNA_HEARTBEAT_S``, default 30)."""
    return max(1.0, float(os.environ.get("COMPARNA_HEARTBEAT_S", "30")))


def record_heartbeat(*, role: str, name: str, queues: list[str], started_at) -> None:
    """Write this process's row (one upsert; the table holds one row per process name)."""
    from comparna.ops.models import Heartbeat

    close_old_connections()
    Heartbeat.objects.update_or_create(
        name=name,
        defaults={
            "role": role,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "queues": sorted(queues),
            "started_at": started_at,
            "seen_at": timezone.now(),
        },
    )


def _safely(fn, *args, **kwargs) -> None:
    # A database outage must never stop a worker or beat: the missing beat is what the checks report.
    try:
        fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - logged, retried at the next beat
        log.warning("heartbeat not recorded", exc_info=True)


def worker_queues(app) -> list[str]:
    """The queues this worker consumes (``-Q``), or every declared queue when it consumes all."""
    queues = app.amqp.queues
    selected = queues.consume_from or queues
    return sorted(selected.keys())


class HeartbeatStep(bootsteps.StartStopStep):
    """Worker bootstep: beat once at start, then every ``COMPARNA_HEARTBEAT_S`` on the worker's timer."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs) -> None:
        super().__init__(worker, **kwargs)
        self.tref = None

    def start(self, worker) -> None:
        queues = worker_queues(worker.app)
        started = timezone.now()
        args = {"role": "worker", "name": worker.hostname, "queues": queues, "started_at": started}
        _safely(record_heartbeat, **args)
        self.tref = worker.timer.call_repeatedly(
            heartbeat_interval_s(), _safely, (record_heartbeat,), args, priority=10
        )

    def stop(self, worker) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None


class HeartbeatScheduler(PersistentScheduler):
    """Celery's persistent beat scheduler that also records beat's heartbeat (its last tick)."""

    def __init__(self, *args, **kwargs) -> None:
        self._last_beat = float("-inf")
        self._started = timezone.now()
        super().__init__(*args, **kwargs)

    def tick(self, *args, **kwargs) -> float:
        interval = heartbeat_interval_s()
        now = time.monotonic()
        if now - self._last_beat >= interval:
            self._last_beat = now
            _safely(
                record_heartbeat,
                role="beat",
                name=f"beat@{socket.gethostname()}",
                queues=[],
                started_at=self._started,
            )
        return min(super().tick(*args, **kwargs), interval)
