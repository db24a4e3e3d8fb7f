"""Periodic schedules of comparna.ops: the gauges of /metrics (every ``COMPARNA_METRICS_INTERVAL_S``)."""

from __future__ import annotations

import os

SCHEDULE: dict = {
    "refresh-metrics-gauges": {
        "task": "comparna.ops.tasks.refresh_gauges_task",
        "schedule": float(os.environ.get("COMPARNA_METRICS_INTERVAL_S", "120")),
        "options": {"queue": "default", "expires": 600},
    },
}
