"""Periodic schedules of the blind track (UTC; ``comparna.scheduled`` collects them).

- ``blind-prerelease-poll``: every 10 minutes from Saturday to Tuesday; a no-op until the week's files appear
  (Saturday 03:00 UTC) and once they are imported, and between failed attempts (backoff);
- ``blind-tick``: every 5 minutes: blind targets first in the queue, freeze finished predictions, commit at
  the deadline, link and score;
- ``blind-release-check``: daily: holdings status of entries announced but not found (held, withdrawn).

``COMPARNA_BLIND_POLL_INTERVAL_S``, ``COMPARNA_BLIND_TICK_S`` and ``COMPARNA_BLIND_RELEASE_CHECK_S`` replace
them by intervals (integration tests, with a time-travel ``COMPARNA_CLOCK``).
"""

from __future__ import annotations

import os

from celery.schedules import crontab


def _every(name: str, default):
    value = os.environ.get(name)
    return float(value) if value else default


SCHEDULE: dict = {
    "blind-prerelease-poll": {
        "task": "comparna.blind.tasks.poll_prerelease_task",
        "schedule": _every("COMPARNA_BLIND_POLL_INTERVAL_S", crontab(minute="*/10", day_of_week="sat-tue")),
        "options": {"queue": "default"},
    },
    "blind-tick": {
        "task": "comparna.blind.tasks.blind_tick_task",
        "schedule": _every("COMPARNA_BLIND_TICK_S", 300.0),
        "options": {"queue": "default"},
    },
    "blind-release-check": {
        "task": "comparna.blind.tasks.link_released_task",
        "schedule": _every("COMPARNA_BLIND_RELEASE_CHECK_S", crontab(hour=7, minute=0)),
        "options": {"queue": "default"},
    },
}
