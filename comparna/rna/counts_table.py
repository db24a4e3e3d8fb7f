"""The input of every ranking: counts of each (method, target) prediction as dense arrays, and the counts CSV
of ``manage.py rank --counts`` (SCIENCE.md §5)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from comparna.rna import thresholds
from comparna.rna.metrics import mcc_from_arrays

#: Column order of the last axis of :attr:`CountsTable.counts`.
COUNT_FIELDS: tuple[str, ...] = ("tp", "fn", "fp", "fp_compatible", "tn")

ALPHA = thresholds.ALPHA
MIN_COMMON = thresholds.MIN_COMMON

#: The verdict symbols: row wins, row loses, draw (equivalent), undecided.
WIN, LOSS, DRAW, UNKNOWN = "+", "-", "=", "?"


class CountsFormatError(ValueError):
    """A malformed counts CSV; the message names the 1-based line of the problem."""

    def __init__(self, message: str, *, line: int | None = None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


# --------------------------------------------------------------------------------------------------- MCC
def pooled_mcc(counts: np.ndarray) -> np.ndarray:
    """MCC of counts pooled over the second-to-last axis; ``counts[..., :]`` in :data:`COUNT_FIELDS` order."""
    pooled = np.asarray(counts).sum(axis=-2)
    return mcc_from_arrays(*np.moveaxis(pooled, -1, 0))


# ------------------------------------------------------------------------------------------- the input
@dataclass(frozen=True)
class CountsTable:
    """Counts of every (method, target) prediction as dense arrays.

    Parameters
    ----------
    methods : tuple of str
        Method names (unique).
    targets : tuple of str
        Target names (unique); their order defines the order of a pair's common targets.
    counts : numpy.ndarray
        int64 array of shape (methods, targets, 5) in :data:`COUNT_FIELDS` order; zero where absent.
    present : numpy.ndarray
        bool array of shape (methods, targets): whether the method has a prediction for the target.
    """

    methods: tuple[str, ...]
    targets: tuple[str, ...]
    counts: np.ndarray
    present: np.ndarray

    def __post_init__(self) -> None:
        m, t = len(self.methods), len(self.targets)
        if self.counts.shape != (m, t, len(COUNT_FIELDS)) or self.present.shape != (m, t):
            raise ValueError(
                f"counts {self.counts.shape} / present {self.present.shape} do not match "
                f"{m} methods x {t} targets"
            )
        if len(set(self.methods)) != m or len(set(self.targets)) != t:
            raise ValueError("method and target names must be unique")

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, int, int, int, int, int]]) -> CountsTable:
        """Build a table from ``(method, target, tp, fn, fp, fp_compatible, tn)`` rows (one per prediction).

        Methods and targets keep their order of first appearance. A repeated (method, target) raises
        ``ValueError``.
        """
        method_ix: dict[str, int] = {}
        target_ix: dict[str, int] = {}
        keys: list[tuple[int, int]] = []
        values: list[tuple[int, ...]] = []
        for method, target, *numbers in rows:
            keys.append(
                (method_ix.setdefault(method, len(method_ix)), target_ix.setdefault(target, len(target_ix)))
            )
            values.append(tuple(numbers))
        counts = np.zeros((len(method_ix), len(target_ix), len(COUNT_FIELDS)), dtype=np.int64)
        present = np.zeros((len(method_ix), len(target_ix)), dtype=bool)
        if keys:
            mi, ti = np.array(keys, dtype=np.intp).T
            if np.unique(mi * len(target_ix) + ti).size != len(keys):
                raise ValueError("a (method, target) pair appears more than once")
            counts[mi, ti] = np.array(values, dtype=np.int64)
            present[mi, ti] = True
        return cls(tuple(method_ix), tuple(target_ix), counts, present)

    def select_targets(self, targets: Sequence[str] | np.ndarray) -> CountsTable:
        """The table restricted to some targets (names, or an index/boolean array), in the given order."""
        if len(targets) and isinstance(targets[0], str):
            where = {name: i for i, name in enumerate(self.targets)}
            ix = np.array([where[name] for name in targets], dtype=np.intp)
        else:
            ix = np.asarray(targets)
            ix = np.flatnonzero(ix) if ix.dtype == bool else ix.astype(np.intp)
        return CountsTable(
            self.methods, tuple(self.targets[i] for i in ix), self.counts[:, ix], self.present[:, ix]
        )

    def select_methods(self, methods: Sequence[str]) -> CountsTable:
        """The table restricted to some methods, in the given order."""
        ix = [self.methods.index(name) for name in methods]
        return CountsTable(tuple(methods), self.targets, self.counts[ix], self.present[ix])


def read_counts_csv(source: str | Path | io.TextIOBase) -> CountsTable:
    """Read ``method,target,tp,fn,fp,fp_compatible,tn`` rows (:func:`read_counts_with_families`, families
    left out)."""
    return read_counts_with_families(source)[0]


def read_counts_with_families(source: str | Path | io.TextIOBase) -> tuple[CountsTable, list[str] | None]:
    """Read ``method,target,tp,fn,fp,fp_compatible,tn`` rows (with that header, any column order) and an
    optional ``family`` column.

    Parameters
    ----------
    source : path or text stream

    Returns
    -------
    (table, families)
        ``families``: the family label of every target of the table (in its order), or None without a
        ``family`` column. A target's family is the same on each of its rows; an empty cell makes the
        target its own family (``"target:<name>"``).

    Raises
    ------
    CountsFormatError
        Missing columns, a non-integer or negative count, ``fp_compatible > fp``, an empty name, a repeated
        (method, target), a target given two families, or no rows at all; the message names the line.
    """
    if isinstance(source, (str, Path)):
        with open(source, newline="", encoding="utf-8") as handle:
            return read_counts_with_families(handle)
    reader = csv.reader(source)
    header = next(reader, None)
    if header is None:
        raise CountsFormatError(
            "empty file, expected the header method,target," + ",".join(COUNT_FIELDS), line=1
        )
    header = [name.strip() for name in header]
    required = ("method", "target", *COUNT_FIELDS)
    missing = [name for name in required if name not in header]
    if missing:
        raise CountsFormatError(f"header lacks column(s) {', '.join(missing)}", line=1)
    col = [header.index(name) for name in required]
    family_col = header.index("family") if "family" in header else None
    families: dict[str, tuple[str, int]] = {}
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for row in reader:
        line = reader.line_num
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise CountsFormatError(f"expected {len(header)} fields, found {len(row)}", line=line)
        method, target = row[col[0]].strip(), row[col[1]].strip()
        if not method or not target:
            raise CountsFormatError("empty method or target name", line=line)
        numbers = []
        for name, c in zip(COUNT_FIELDS, col[2:], strict=True):
            text = row[c].strip()
            try:
                value = int(text)
            except ValueError:
                raise CountsFormatError(f"{name} is not an integer: {text!r}", line=line) from None
            if value < 0:
                raise CountsFormatError(f"{name} is negative: {value}", line=line)
            numbers.append(value)
        if numbers[3] > numbers[2]:
            raise CountsFormatError(f"fp_compatible {numbers[3]} exceeds fp {numbers[2]}", line=line)
        if (method, target) in seen:
            raise CountsFormatError(
                f"({method}, {target}) already given on line {seen[method, target]}", line=line
            )
        seen[method, target] = line
        rows.append((method, target, *numbers))
        if family_col is not None:
            family = row[family_col].strip() or f"target:{target}"
            known = families.setdefault(target, (family, line))
            if known[0] != family:
                raise CountsFormatError(
                    f"target {target} has family {family!r} here, {known[0]!r} on line {known[1]}", line=line
                )
    if not rows:
        raise CountsFormatError("no prediction rows after the header", line=2)
    table = CountsTable.from_rows(rows)
    if family_col is None:
        return table, None
    return table, [families[target][0] for target in table.targets]
