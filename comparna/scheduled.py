"""Periodic schedules of the ``comparna`` app, plus the collector that merges every app's schedules.

Schedules live only in ``<app>/scheduled.py`` (ARCHITECTURE.md); beat runs as its own process.
``COMPARNA_RANKING_INTERVAL_S`` replaces the nightly crontab by an interval (used by the integration tests
to see beat fire within minutes).
"""

from __future__ import annotations

import importlib
import os

from celery.schedules import crontab

_interval = os.environ.get("COMPARNA_RANKING_INTERVAL_S")

SCHEDULE: dict = {
    "nightly-rankings": {
        "task": "comparna.tasks.recompute_rankings_task",
        "schedule": float(_interval) if _interval else crontab(hour=2, minute=30),
        # a tick that waited longer than the interval is dropped: the run that made it wait covers it, and
        # ticks piled behind a run longer than the interval kept the default worker from everything else
        "options": {"queue": "default", "expires": float(_interval) if _interval else 6 * 3600},
    },
    # what the pages show of the predictions table, counted in the background (issue 28)
    "refresh-tallies": {
        "task": "comparna.tasks.refresh_tallies_task",
        "schedule": float(os.environ.get("COMPARNA_TALLY_INTERVAL_S", "60")),
        "options": {"queue": "default", "expires": 300},
    },
    "refresh-family-summaries": {
        "task": "comparna.tasks.refresh_family_summaries_task",
        "schedule": float(os.environ.get("COMPARNA_FAMILIES_INTERVAL_S", "600")),
        "options": {"queue": "default", "expires": 1200},
    },
    "refresh-method-summaries": {
        "task": "comparna.tasks.refresh_method_summaries_task",
        "schedule": float(os.environ.get("COMPARNA_METHODS_INTERVAL_S", "600")),
        "options": {"queue": "default", "expires": 1200},
    },
}

SCHEDULE_MODULES = (
    "comparna.scheduled",
    "comparna.blind.scheduled",
    "comparna.owners.scheduled",
    "comparna.ops.scheduled",
    "comparna.advice.scheduled",
    "predictors.scheduled",
    "ingest.scheduled",
)


def collect_schedules() -> dict:
    merged: dict = {}
    for name in SCHEDULE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        for key, entry in getattr(module, "SCHEDULE", {}).items():
            if key in merged:
                raise ValueError(f"duplicate schedule name {key!r} in {name}")
            merged[key] = entry
    return merged
