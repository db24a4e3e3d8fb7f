"""CSV cells that a spreadsheet cannot run (issue 36): every CSV the site writes goes through
:func:`safe_writer`.

A cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a formula by
spreadsheet programs (CSV injection, OWASP): a method or target name such as ``=HYPERLINK(...)`` would run
when a downloaded ranking is opened. Such a cell is written with a leading apostrophe, which spreadsheets
show as text. A plain number (``-0.25``, ``+1e-3``) is left as it is: it is read as a number, never run.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and text.lower().lstrip("+-") not in ("nan", "inf", "infinity")


def safe_cell(value):
    """``value``, with a leading apostrophe if it is text a spreadsheet would read as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


class SafeWriter:
    """A :func:`csv.writer` whose every cell goes through :func:`safe_cell`."""

    def __init__(self, fh, **kwargs) -> None:
        self._writer = csv.writer(fh, **kwargs)

    def writerow(self, row: Iterable):
        return self._writer.writerow([safe_cell(c) for c in row])

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


def safe_writer(fh, **kwargs) -> SafeWriter:
    return SafeWriter(fh, **kwargs)
