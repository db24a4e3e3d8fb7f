"""Periodic schedules of comparna.ops: the gauges of /metrics (every ``COMPARNA_METRICS_INTERVAL_S``) and,
until the PDB set has begun, another attempt at its first poll (every ``COMPARNA_PDB_START_RETRY_S``)."""

from __future__ import annotations

import os

SCHEDULE: dict = {
    "refresh-metrics-gauges": {
        "task": "comparna.ops.tasks.refresh_gauges_task",
        "schedule": float(os.environ.get("COMPARNA_METRICS_INTERVAL_S", "120")),
        "options": {"queue": "default", "expires": 600},
    },
    "start-pdb-set": {
        "task": "comparna.ops.tasks.start_pdb_set_task",
        "schedule": float(os.environ.get("COMPARNA_PDB_START_RETRY_S", "3600")),
        "options": {"queue": "default", "expires": 600},
    },
}
