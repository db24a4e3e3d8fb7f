"""Release-week windows: the PDB releases new entries once a week, on Wednesdays (00:00 UTC)."""

from __future__ import annotations

import datetime as dt

WEDNESDAY = 2


def release_weeks(since: dt.date, until: dt.date) -> list[tuple[dt.date, dt.date, dt.date | None]]:
    """Split [since, until] into windows that each end on a Wednesday (or on ``until``).

    Returns ``(start, end, release_day)`` triples; ``release_day`` is the window's Wednesday, the release
    date of every entry the window finds, or None when the window contains no Wednesday.
    """
    if until < since:
        raise ValueError(f"empty window: {since} > {until}")
    out = []
    start = since
    while start <= until:
        end = start + dt.timedelta(days=(WEDNESDAY - start.weekday()) % 7)
        end = min(end, until)
        out.append((start, end, end if end.weekday() == WEDNESDAY else None))
        start = end + dt.timedelta(days=1)
    return out
