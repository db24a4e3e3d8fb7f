"""Periodic schedules of the advisor (collected by comparna/scheduled.py)."""

from __future__ import annotations

SCHEDULE: dict = {
    "delete-expired-advice": {
        "task": "comparna.advice.tasks.delete_expired_advice_task",
        "schedule": 3600.0,
        "options": {"queue": "default", "expires": 1800},
    },
    "sweep-stuck-advice": {
        "task": "comparna.advice.tasks.sweep_stuck_advice_task",
        "schedule": 600.0,
        "options": {"queue": "default", "expires": 300},
    },
}
