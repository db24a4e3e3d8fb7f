import datetime as dt

import pytest

from ingest.pdb.windows import release_weeks


def test_windows_cover_the_range_once_and_end_on_wednesdays():
    since, until = dt.date(2024, 1, 1), dt.date(2024, 3, 9)
    weeks = release_weeks(since, until)
    assert weeks[0][0] == since and weeks[-1][1] == until
    for (_, e1, _), (s2, _, _) in zip(weeks, weeks[1:], strict=False):
        assert s2 == e1 + dt.timedelta(days=1)
    for start, end, release in weeks:
        assert start <= end
        wednesdays = [
            start + dt.timedelta(d)
            for d in range((end - start).days + 1)
            if (start + dt.timedelta(d)).weekday() == 2
        ]
        assert len(wednesdays) <= 1
        assert release == (wednesdays[0] if wednesdays else None)


def test_empty_window_is_an_error():
    with pytest.raises(ValueError):
        release_weeks(dt.date(2024, 1, 2), dt.date(2024, 1, 1))
