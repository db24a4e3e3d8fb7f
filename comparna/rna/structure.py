"""The secondary-structure model shared by every part of CompaRNA.

A secondary structure is a set of base pairs (i, j), 1-based, i < j, over a sequence of length L
(SCIENCE.md §1). Multiplets (one base in several pairs) are allowed in the model because the extended
pair definition produces them; formats that cannot carry them refuse them when writing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

#: Bracket pairs for dot-bracket, by pseudoknot level: ``()`` for level 0, ``[]`` 1, ``{}`` 2, ``<>`` 3,
#: then ``Aa``, ``Bb``, ... ``Zz`` (upper case opens, lower case closes; SCIENCE.md §1).
BRACKETS: tuple[tuple[str, str], ...] = (("(", ")"), ("[", "]"), ("{", "}"), ("<", ">")) + tuple(
    (chr(c), chr(c + 32)) for c in range(ord("A"), ord("Z") + 1)
)


class StructureFormatError(ValueError):
    """Raised for every malformed structure or sequence input.

    The message names the line and/or position of the problem, e.g.
    ``"line 7: position 12 paired to 40, beyond the sequence length 35"``.

    Parameters
    ----------
    message : str
        What is wrong.
    line : int, optional
        1-based line number in the input, when the input has lines.
    position : int, optional
        1-based position (column or nucleotide index) of the problem.
    """

    def __init__(self, message: str, *, line: int | None = None, position: int | None = None):
        self.line = line
        self.position = position
        where = []
        if line is not None:
            where.append(f"line {line}")
        if position is not None:
            where.append(f"position {position}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


@dataclass(frozen=True)
class Structure:
    """A set of base pairs over a sequence of a given length.

    Parameters
    ----------
    length : int
        Sequence length L (>= 0).
    pairs : frozenset of (int, int)
        Base pairs, 1-based, with ``1 <= i < j <= length``.
    """

    length: int
    pairs: frozenset[tuple[int, int]] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.length < 0:
            raise StructureFormatError(f"negative sequence length {self.length}")
        for i, j in self.pairs:
            if not (1 <= i < j <= self.length):
                raise StructureFormatError(f"pair ({i}, {j}) is not 1 <= i < j <= {self.length}", position=i)

    @classmethod
    def from_pairs(cls, length: int, pairs: Iterable[tuple[int, int]]) -> Structure:
        """Build a structure from pairs given in any orientation; (j, i) is stored as (i, j)."""
        norm = set()
        for a, b in pairs:
            if a == b:
                raise StructureFormatError(f"base {a} paired with itself", position=a)
            norm.add((a, b) if a < b else (b, a))
        return cls(length, frozenset(norm))

    def sorted_pairs(self) -> list[tuple[int, int]]:
        return sorted(self.pairs)

    def partners(self) -> dict[int, list[int]]:
        """Map each paired position to the sorted list of its partners (several for multiplets)."""
        out: dict[int, list[int]] = {}
        for i, j in self.pairs:
            out.setdefault(i, []).append(j)
            out.setdefault(j, []).append(i)
        for v in out.values():
            v.sort()
        return out

    @property
    def has_multiplets(self) -> bool:
        # Each pair has two distinct ends, so fewer distinct ends than 2·|pairs| means a shared base.
        return len({x for p in self.pairs for x in p}) != 2 * len(self.pairs)

    def multiplet_positions(self) -> list[int]:
        """Sorted positions that take part in more than one pair."""
        seen: set[int] = set()
        multi: set[int] = set()
        for i, j in self.pairs:
            for x in (i, j):
                if x in seen:
                    multi.add(x)
                seen.add(x)
        return sorted(multi)

    @property
    def is_pseudoknotted(self) -> bool:
        """True when two pairs cross: i < k < j < l."""
        return not _is_nested(self.pairs)

    @classmethod
    def empty(cls, length: int) -> Structure:
        """The structure without base pairs."""
        return cls(length, frozenset())

    def partner_array(self) -> np.ndarray:
        """Partner of each position as an int array of length L + 1 (index 0 unused, 0 = unpaired).

        Raises
        ------
        StructureFormatError
            If the structure has multiplets (a position would need several partners).
        """
        out = np.zeros(self.length + 1, dtype=np.int64)
        if not self.pairs:
            return out
        ps = np.array(list(self.pairs), dtype=np.int64)
        if np.bincount(ps.ravel(), minlength=self.length + 1).max() > 1:
            a = self.multiplet_positions()[0]
            raise StructureFormatError(
                f"base {a} is paired with {self.partners()[a]} (multiplet), not a single partner", position=a
            )
        out[ps[:, 0]] = ps[:, 1]
        out[ps[:, 1]] = ps[:, 0]
        return out

    def bracket_levels(self) -> list[list[tuple[int, int]]]:
        """Split the pairs into pseudoknot levels; see :func:`bracket_levels`."""
        return bracket_levels(self.pairs)

    @property
    def pseudoknot_order(self) -> int:
        """Number of bracket levels beyond the first (0 for a nested structure)."""
        return max(len(self.bracket_levels()) - 1, 0)


def _is_nested(pairs: Iterable[tuple[int, int]]) -> bool:
    """True when no two pairs cross (i < k < j < l); pairs sharing an endpoint do not cross.

    Sorting by (i ascending, j descending) makes the open intervals containing the current start a
    chain, so only the innermost open interval (stack top) needs checking: O(n log n).
    """
    stack: list[int] = []
    for i, j in sorted(pairs, key=lambda p: (p[0], -p[1])):
        while stack and stack[-1] <= i:
            stack.pop()
        if stack and j > stack[-1]:
            return False
        stack.append(j)
    return True


def _max_nested_subset(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """A maximum-cardinality non-crossing subset of multiplet-free pairs (interval DP).

    The DP runs over the compressed endpoints of the pairs: ``M[a, b]`` is the largest nested subset of the
    pairs lying inside endpoints a..b; either the pair opening at ``a`` is skipped (``M[a+1, b]``) or it is
    taken, splitting the interval at its closing endpoint c (``1 + M[a+1, c-1] + M[c+1, b]``). Each row is
    computed with numpy over all b at once. Ties are broken in favour of taking the pair that opens
    leftmost, so in an H-type pseudoknot with equal stems the 5' stem gets the lower level.
    """
    ends = sorted({x for p in pairs for x in p})
    m = len(ends)
    index = {x: n for n, x in enumerate(ends)}
    close_of = np.full(m, -1, dtype=np.int64)
    for i, j in pairs:
        close_of[index[i]] = index[j]
    # M has a zero sentinel column/row so that M[a+1, c-1] and M[c+1, b] never index out of range.
    M = np.zeros((m + 2, m + 1), dtype=np.int32)  # M[a + 1, b + 1] holds the value for (a, b)

    def val(a: int, b: int) -> int:
        return int(M[a + 1, b + 1]) if a <= b else 0

    cols = np.arange(m)
    for a in range(m - 1, -1, -1):
        row = M[a + 2, 1:].copy()  # skip the pair at a
        c = close_of[a]
        if c >= 0:
            inner = val(a + 1, c - 1)
            take = 1 + inner + M[c + 2, 1:]  # M[c+1, b]; zero row when c + 1 > b handled by the mask
            take = np.where(cols >= c, take, 0)
            row = np.maximum(row, take)
        row[:a] = 0
        M[a + 1, 1:] = row
    chosen: list[tuple[int, int]] = []
    todo = [(0, m - 1)]
    while todo:
        a, b = todo.pop()
        while a <= b:
            c = int(close_of[a])
            if c >= 0 and c <= b and 1 + val(a + 1, c - 1) + val(c + 1, b) == val(a, b):
                chosen.append((ends[a], ends[c]))
                todo.append((a + 1, c - 1))
                a = c + 1
            else:
                a += 1
    return sorted(chosen)


def bracket_levels(pairs: Iterable[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Assign pairs to dot-bracket levels (``()``, ``[]``, ``{}``, ``<>``, ``Aa``, ...).

    Method: level 0 is a maximum-cardinality non-crossing subset of all pairs, level 1 a maximum
    non-crossing subset of the rest, and so on (the greedy-by-level maximum-nested-subset scheme of
    Smit et al., RNA 2008, "From knotted to nested RNA structures"). Pairs that
    cross nothing belong to every maximum subset and go straight to level 0, so the DP only runs over the
    crossing pairs. Every level is nested by construction.

    Parameters
    ----------
    pairs : iterable of (int, int)
        Pairs with i < j and no multiplets.

    Returns
    -------
    list of list of (int, int)
        Sorted pairs per level; empty list for no pairs.

    Raises
    ------
    StructureFormatError
        If a position takes part in two pairs (dot-bracket cannot express multiplets).
    """
    pairs = sorted(pairs)
    seen: dict[int, tuple[int, int]] = {}
    for p in pairs:
        for x in p:
            if x in seen:
                raise StructureFormatError(
                    f"base {x} is in pairs {seen[x]} and {p} (multiplet); brackets cannot express it",
                    position=x,
                )
            seen[x] = p
    if not pairs:
        return []
    crossing = _crossing_pairs(pairs)
    free = [p for p in pairs if p not in crossing]
    rest = sorted(crossing)
    levels: list[list[tuple[int, int]]] = []
    first = True
    while rest or first:
        chosen = _max_nested_subset(rest) if rest else []
        if first:
            chosen = sorted(free + chosen)
            first = False
        levels.append(chosen)
        taken = set(chosen)
        rest = [p for p in rest if p not in taken]
    return levels


def _crossing_pairs(pairs: Sequence[tuple[int, int]]) -> set[tuple[int, int]]:
    """The pairs that cross at least one other pair of the same set."""
    s = Structure(max(j for _, j in pairs), frozenset(pairs))
    return {p for p, c in zip(pairs, crosses(s, pairs), strict=True) if c}


def _sparse_table(values: np.ndarray, op) -> list[np.ndarray]:
    table = [values]
    span = 1
    while 2 * span <= len(values):
        prev = table[-1]
        table.append(op(prev[:-span], prev[span:]))
        span *= 2
    return table


def _range_query(table: list[np.ndarray], lo: np.ndarray, hi: np.ndarray, op) -> np.ndarray:
    """op over values[lo..hi] inclusive, for arrays of non-empty ranges (lo <= hi)."""
    n = hi - lo + 1
    k = np.floor(np.log2(n)).astype(np.int64)
    out = np.empty(len(lo), dtype=table[0].dtype)
    for level in np.unique(k):
        sel = k == level
        t = table[level]
        out[sel] = op(t[lo[sel]], t[hi[sel] - (1 << level) + 1])
    return out


def crosses(reference: Structure, candidates: Sequence[tuple[int, int]]) -> np.ndarray:
    """For each candidate (i, j), whether some reference pair (k, l) crosses it (i<k<j<l or k<i<l<j).

    A crossing pair has one end strictly inside (i, j) and the other strictly outside [i, j], so it is a
    range-maximum (farthest partner to the right) / range-minimum (farthest to the left) query over the
    inside, answered with sparse tables in O(1) per candidate after O(L log L) set-up.
    """
    L = reference.length
    if not candidates or not reference.pairs:
        return np.zeros(len(candidates), dtype=bool)
    far_right = np.arange(L + 2)
    far_left = np.arange(L + 2)
    ref = np.array(sorted(reference.pairs), dtype=np.int64)
    np.maximum.at(far_right, ref[:, 0], ref[:, 1])
    np.minimum.at(far_left, ref[:, 1], ref[:, 0])
    cand = np.array(candidates, dtype=np.int64)
    i, j = cand[:, 0], cand[:, 1]
    inside = j - i > 1
    out = np.zeros(len(cand), dtype=bool)
    if inside.any():
        lo, hi = i[inside] + 1, j[inside] - 1
        right = _range_query(_sparse_table(far_right, np.maximum), lo, hi, np.maximum)
        left = _range_query(_sparse_table(far_left, np.minimum), lo, hi, np.minimum)
        out[inside] = (right > j[inside]) | (left < i[inside])
    return out
