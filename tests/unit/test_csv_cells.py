"""Every CSV the site writes escapes cells a spreadsheet would run as a formula (issue 36,
:mod:`comparna.csv_cells`); plain numbers and text are written as they are."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from comparna.csv_cells import safe_cell, safe_writer

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "cell", ["=HYPERLINK(\"http://x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "-x"]
)
def test_cells_a_spreadsheet_would_run_are_written_as_text(cell):
    buf = io.StringIO()
    safe_writer(buf, lineterminator="\n").writerow(["name", cell, 3])
    written = next(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    assert written[1] == "'" + cell and written[0] == "name" and written[2] == "3"


@pytest.mark.parametrize("cell", ["-0.25", "+1e-3", "-3", "0.5", "RNAfold", "(((...)))", "", "a=b"])
def test_plain_numbers_and_text_are_left_as_they_are(cell):
    assert safe_cell(cell) == cell
    assert safe_cell(-0.25) == -0.25 and safe_cell(None) is None


def test_no_csv_writer_is_left_outside_the_safe_one():
    """grep: every csv.writer of the application is comparna.csv_cells' own."""
    offenders = [
        str(path.relative_to(REPO))
        for root in ("comparna", "predictors", "ingest")
        for path in (REPO / root).rglob("*.py")
        if ("csv.writer(" in path.read_text() or "csv.DictWriter(" in path.read_text())
        and path.name != "csv_cells.py"
    ]
    assert offenders == []
