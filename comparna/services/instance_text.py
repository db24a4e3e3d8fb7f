"""Page texts generated from the instance's own settings and data, never hard-coded (issue 27).

A page that says "rankings are recomputed nightly" on an instance that recomputes them every 5 minutes, or
"the PDB set grows every week" on one without a PDB dataset, tells a visitor something false about the
numbers in front of them. The schedule is read from the beat schedule itself
(:data:`comparna.scheduled.SCHEDULE`, what beat runs), the datasets from the database.
"""

from __future__ import annotations

from celery.schedules import crontab

from comparna.models import Dataset

#: The beat entry that recomputes the rankings.
RANKING_ENTRY = "nightly-rankings"


def _every(seconds: float) -> str:
    if seconds < 120:
        return f"every {seconds:g} seconds"
    minutes = seconds / 60
    if minutes < 120:
        return f"every {minutes:g} minutes"
    return f"every {minutes / 60:g} hours"


def ranking_schedule_text(schedule=None) -> str:
    """How often rankings are recomputed, in words: "every 5 minutes", "nightly at 02:30 UTC", ...

    Parameters
    ----------
    schedule : float, timedelta or celery crontab, optional
        Default: the ranking entry of :data:`comparna.scheduled.SCHEDULE`.
    """
    if schedule is None:
        from comparna.scheduled import SCHEDULE

        entry = SCHEDULE.get(RANKING_ENTRY)
        if entry is None:
            return "when an operator runs manage.py rank"
        schedule = entry["schedule"]
    if isinstance(schedule, int | float):
        return _every(float(schedule))
    if hasattr(schedule, "total_seconds"):
        return _every(schedule.total_seconds())
    if isinstance(schedule, crontab):
        hours, minutes = sorted(schedule.hour), sorted(schedule.minute)
        if len(hours) == 1 and len(minutes) == 1 and len(schedule.day_of_week) == 7:
            return f"nightly at {hours[0]:02d}:{minutes[0]:02d} UTC"
        return f"on the schedule {schedule!r}"
    seconds = getattr(getattr(schedule, "run_every", None), "total_seconds", None)
    return _every(seconds()) if seconds else "periodically"


def has_growing_dataset() -> bool:
    """Whether this instance has a dataset that grows week after week (the PDB set)."""
    return Dataset.objects.filter(kind=Dataset.Kind.PDB).exists()
