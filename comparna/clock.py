"""The clock of the weekly schedules: real UTC time, or a time-travel clock set by ``COMPARNA_CLOCK``.

The blind track follows the wwPDB's week (sequences on Saturday, structures on Wednesday) and the weekly PDB
poll asks for the entries released up to "today". Both read the time here, so one setting moves every
deadline together. ``COMPARNA_CLOCK`` is unset in a deployment (real time). A rehearsal or an integration
test sets it to ``<simulated start>@<real origin>[x<rate>]``::

    COMPARNA_CLOCK=2024-01-06T03:00:00Z@1732350000.5x3600

meaning: at real Unix time 1732350000.5 the clock reads 2024-01-06 03:00 UTC, and it then runs 3600 times
faster than real time. Every process (web, workers, beat) given the same value reads the same time. Records
keep both: a frozen prediction stores the clock's time (deadlines are judged by it) and Django's real
``auto_now`` timestamps stay real.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

UTC = dt.UTC

_SPEC = re.compile(
    r"^(?P<start>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]00:00))"
    r"@(?P<origin>\d{1,12}(?:\.\d{1,6})?)"
    r"(?:x(?P<rate>\d{1,7}(?:\.\d{1,6})?))?$"
)


class ClockSettingError(ValueError):
    """``COMPARNA_CLOCK`` is not ``<ISO start, UTC>@<unix origin>[x<rate>]``."""


@dataclass(frozen=True)
class Clock:
    """A clock reading ``start`` at real Unix time ``origin`` and advancing ``rate`` times real time."""

    start: dt.datetime | None = None
    origin: float = 0.0
    rate: float = 1.0

    @property
    def simulated(self) -> bool:
        return self.start is not None

    def at(self, real: float) -> dt.datetime:
        """The clock's time at real Unix time ``real``."""
        if self.start is None:
            return dt.datetime.fromtimestamp(real, UTC)
        return self.start + dt.timedelta(seconds=(real - self.origin) * self.rate)

    def now(self) -> dt.datetime:
        return self.at(time.time())

    def of(self, moment: dt.datetime) -> dt.datetime:
        """The clock's time at a real moment recorded by Django (e.g. ``Prediction.finished_at``)."""
        return self.at(moment.timestamp())

    def real_seconds(self, simulated_seconds: float) -> float:
        """Real seconds that pass while the clock advances ``simulated_seconds``."""
        return simulated_seconds / self.rate

    def describe(self) -> str:
        if self.start is None:
            return "real time (UTC)"
        return (
            f"simulated: {self.start:%Y-%m-%d %H:%M} UTC at real time "
            f"{dt.datetime.fromtimestamp(self.origin, UTC):%Y-%m-%d %H:%M:%S} UTC, running {self.rate:g}x"
        )


def parse_clock(spec: str) -> Clock:
    """The :class:`Clock` of a ``COMPARNA_CLOCK`` value ('' is real time)."""
    spec = spec.strip()
    if not spec:
        return Clock()
    match = _SPEC.match(spec)
    if match is None:
        raise ClockSettingError(
            f"COMPARNA_CLOCK={spec!r}: expected <start>@<origin>[x<rate>], e.g. "
            "2024-01-06T03:00:00Z@1732350000x3600 (start in UTC, origin a Unix time, rate > 0)"
        )
    start = dt.datetime.fromisoformat(match["start"].replace("Z", "+00:00")).astimezone(UTC)
    rate = float(match["rate"] or 1)
    if rate <= 0:
        raise ClockSettingError(f"COMPARNA_CLOCK={spec!r}: the rate must be positive")
    return Clock(start, float(match["origin"]), rate)


@lru_cache(maxsize=4)
def _cached(spec: str) -> Clock:
    return parse_clock(spec)


def clock() -> Clock:
    """The configured clock (``settings.CLOCK``)."""
    return _cached(getattr(settings, "CLOCK", "") or "")


def now() -> dt.datetime:
    """The current time (aware, UTC) by the configured clock."""
    return clock().now()


def today() -> dt.date:
    return now().date()
