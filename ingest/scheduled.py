"""Periodic schedules of the ingest app.

The PDB releases new entries on Wednesdays at 00:00 UTC; polling on Thursday morning leaves the search
index time to catch up. ``COMPARNA_PDB_POLL_INTERVAL_S`` replaces the weekly crontab by an interval
(used by the integration tests).
"""

from __future__ import annotations

import os

from celery.schedules import crontab

_interval = os.environ.get("COMPARNA_PDB_POLL_INTERVAL_S")

SCHEDULE: dict = {
    "weekly-pdb-poll": {
        "task": "ingest.tasks.poll_pdb_task",
        "schedule": float(_interval) if _interval else crontab(day_of_week="thu", hour=6, minute=0),
        "options": {"queue": "default"},
    },
    "pdb-release-windows": {
        "task": "ingest.tasks.refresh_release_windows_task",
        "schedule": crontab(hour=0, minute=30),
        "options": {"queue": "default"},
    },
    "assign-missing-families": {
        "task": "ingest.tasks.assign_missing_families_task",
        "schedule": float(os.environ.get("COMPARNA_FAMILY_SWEEP_INTERVAL_S", "3600")),
        "options": {"queue": "families"},
    },
}
