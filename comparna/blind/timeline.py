"""The weekly timeline of the blind track (all times UTC, by :mod:`comparna.clock`).

::

    Saturday 03:00   wwPDB publishes the sequences of next Wednesday's entries      week.opens_at
    Saturday 03:00-  beat: pre-release poll every 10 min (retried with backoff until it has a usable file)
    Saturday-Tuesday every active method predicts every blind target; outcomes are frozen (SHA-256)
    Tuesday 22:00    deadline: the commitment file (hashes of every frozen prediction) is published;
                     predictions frozen later are late (stored, never ranked blind)     week.deadline
    Wednesday 00:00  the PDB releases the coordinates                                  week.release_at
    Thursday 06:00   beat: the weekly PDB poll fetches and annotates them; then the blind targets are
                     linked to their chains, closed (unusable, withdrawn) or kept waiting (held), the
                     committed predictions are scored and the blind rankings recomputed

The deadline's distance to the release is ``BLIND_DEADLINE_BEFORE_RELEASE_S`` (2 h by default).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings

UTC = dt.UTC
WEDNESDAY = 2
#: Saturday 03:00 UTC is 3 days 21 hours before Wednesday 00:00 UTC.
OPENS_BEFORE_RELEASE = dt.timedelta(days=3, hours=21)


@dataclass(frozen=True)
class WeekTimes:
    release_date: dt.date
    opens_at: dt.datetime
    deadline: dt.datetime
    release_at: dt.datetime


def week_times(release_date: dt.date) -> WeekTimes:
    """The times of the week whose release is ``release_date`` (a Wednesday)."""
    if release_date.weekday() != WEDNESDAY:
        raise ValueError(f"{release_date} is not a Wednesday (PDB releases are on Wednesdays)")
    release_at = dt.datetime.combine(release_date, dt.time(0, 0), UTC)
    deadline = release_at - dt.timedelta(seconds=settings.BLIND_DEADLINE_BEFORE_RELEASE_S)
    return WeekTimes(release_date, release_at - OPENS_BEFORE_RELEASE, deadline, release_at)


def upcoming_release(moment: dt.datetime) -> dt.date:
    """The first Wednesday release strictly after ``moment``."""
    moment = moment.astimezone(UTC)
    day = moment.date()
    ahead = (WEDNESDAY - day.weekday()) % 7
    candidate = day + dt.timedelta(days=ahead)
    if dt.datetime.combine(candidate, dt.time(0, 0), UTC) <= moment:
        candidate += dt.timedelta(days=7)
    return candidate
