"""Strict parsing of integers that come from outside: URL parts, query parameters and headers.

``str.isdigit()`` accepts "²" and other Unicode digits that ``int()`` then rejects (a 500), ``\\d`` in a
regular expression matches Arabic-Indic digits, and ``int()`` of a few thousand digits raises (Python's
4300-digit limit) or overflows the database's 64-bit integer columns. Everything here takes ASCII digits
only, at most :data:`MAX_ID_DIGITS` of them.
"""

from __future__ import annotations

import re

#: At most 18 digits: every such number fits a signed 64-bit integer (database ids, byte offsets).
MAX_ID_DIGITS = 18
ID_PATTERN = f"[0-9]{{1,{MAX_ID_DIGITS}}}"
_ID = re.compile(ID_PATTERN)


def ascii_int(value: str | None) -> int | None:
    """``value`` as a non-negative integer when it is 1-18 ASCII digits, else None."""
    if value is None or not _ID.fullmatch(value):
        return None
    return int(value)


class IdConverter:
    """The ``<id:...>`` path converter: like ``<int:...>`` but at most 18 digits (a bigint id).

    A longer number would pass Django's ``int`` converter and then fail in the database (SQLite
    OverflowError, PostgreSQL "out of range"), i.e. a 500 instead of a 404.
    """

    regex = ID_PATTERN

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
