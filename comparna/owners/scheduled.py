"""Periodic schedules of method owners: the e-mail digest (daily at 06:00 UTC, or every
``COMPARNA_DIGEST_INTERVAL_S`` seconds when set, e.g. in tests); unconfirmed accounts and spent attempt
counters deleted hourly (issue 36)."""

from __future__ import annotations

import os

from celery.schedules import crontab

_interval = os.environ.get("COMPARNA_DIGEST_INTERVAL_S")

SCHEDULE: dict = {
    "owner-digests": {
        "task": "comparna.owners.tasks.send_owner_digests_task",
        "schedule": float(_interval) if _interval else crontab(hour=6, minute=0),
        "options": {"queue": "default"},
    },
    "owner-expire-accounts": {
        "task": "comparna.owners.tasks.expire_accounts_task",
        "schedule": crontab(minute=17),
        "options": {"queue": "default"},
    },
}
