"""Reading the JSON pair list ``{"pairs": [[i, j], ...]}``, the one structure format carrying multiplets.

Its text comes from programs, web services and uploads, so it is read defensively (issue 26): a
5000-digit integer or nesting too deep for the parser is a
:class:`~comparna.rna.structure.StructureFormatError` naming the problem, never another exception (Python
itself raises ValueError converting an integer of more than 4300 digits, which would re-queue a prediction
forever). Re-exported by :mod:`comparna.rna.formats`.
"""

from __future__ import annotations

import json
import reprlib

from comparna.rna.structure import Structure, StructureFormatError

__all__ = ["MAX_JSON_INT_DIGITS", "load_json", "pair_json_structure", "read_pair_json"]

#: Longest integer literal :func:`load_json` reads: positions need far fewer digits, and a program's metadata
#: (a seed, a count) fits easily. A longer one is a format error, never an exception of Python's own (it
#: refuses to convert more than 4300 digits, issue 26).
MAX_JSON_INT_DIGITS = 100
#: Integers at least this large are described in messages, not printed.
_SHOWN_BELOW = 10**15


class _BriefRepr(reprlib.Repr):
    """Short quotes of hostile values: huge integers are described, never converted to text."""

    def repr_int(self, x: int, level: int) -> str:
        if abs(x) >= _SHOWN_BELOW:
            return f"<an integer of {len(format(x, 'x')) * 1.2:.0f}+ digits>"
        return super().repr_int(x, level)


_brief = _BriefRepr()
_brief.maxstring = _brief.maxother = 60


def _json_int(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise StructureFormatError(f"JSON integer of {digits} digits (at most {MAX_JSON_INT_DIGITS})")
    return int(literal)


def load_json(text: str) -> object:
    """``json.loads`` for text a program or a user wrote: every problem is a :class:`StructureFormatError`.

    Refused besides invalid syntax: integers longer than :data:`MAX_JSON_INT_DIGITS` digits and nesting too
    deep for the parser. ``NaN``, ``Infinity`` and numbers overflowing to infinity are read as floats (a
    program's metadata may hold them, e.g. an unbounded cluster index); wherever a number matters, its
    reader refuses them (a position must be an integer, a probability finite).

    Raises
    ------
    StructureFormatError
        Saying what is wrong (line and column for a syntax error).
    """
    try:
        return json.loads(text, parse_int=_json_int)
    except StructureFormatError:
        raise
    except json.JSONDecodeError as e:
        raise StructureFormatError(f"invalid JSON: {e.msg}", line=e.lineno, position=e.colno) from None
    except RecursionError:
        raise StructureFormatError("invalid JSON: nested too deeply") from None
    except (ValueError, TypeError, OverflowError) as e:
        raise StructureFormatError(f"invalid JSON: {str(e)[:200]}") from None


def read_pair_json(text: str, *, length: int) -> Structure:
    """Read ``{"pairs": [[i, j], ...]}`` or a plain list ``[[i, j], ...]`` (1-based, any orientation).

    The only format carrying multiplets. An optional ``"length"`` key must equal ``length``.

    Raises
    ------
    StructureFormatError
        On invalid JSON (line and column), a wrong shape, non-integer or out-of-range positions, a base
        paired with itself or a pair listed twice (position = the pair's first base).
    """
    return pair_json_structure(load_json(text), length=length)


def pair_json_structure(data: object, *, length: int) -> Structure:
    """The structure of already decoded pair-list JSON (see :func:`read_pair_json`).

    Anything may come in (a user's upload decoded by someone else): messages quote it shortened, and
    integers of any size are compared, never converted or printed in full.
    """
    if isinstance(data, dict):
        if "pairs" not in data:
            raise StructureFormatError('JSON object has no "pairs" key')
        if "length" in data and data["length"] != length:
            raise StructureFormatError(
                f'JSON "length" {_brief.repr(data["length"])} differs from the sequence length {length}'
            )
        data = data["pairs"]
    if not isinstance(data, list):
        raise StructureFormatError("JSON pairs must be a list of [i, j]")
    pairs: set[tuple[int, int]] = set()
    for k, item in enumerate(data, start=1):
        if (
            not isinstance(item, list | tuple)
            or len(item) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in item)
        ):
            raise StructureFormatError(f"JSON pair #{k} {_brief.repr(item)} is not a list of two integers")
        a, b = item
        for x in (a, b):
            if not 1 <= x <= length:
                raise StructureFormatError(
                    f"JSON pair #{k} {_brief.repr(item)}: {_brief.repr(x)} outside 1..{length}",
                    position=x if abs(x) < _SHOWN_BELOW else None,
                )
        if a == b:
            raise StructureFormatError(f"JSON pair #{k}: base {a} paired with itself", position=a)
        p = (min(a, b), max(a, b))
        if p in pairs:
            raise StructureFormatError(f"JSON pair #{k} ({a}, {b}) listed twice", position=p[0])
        pairs.add(p)
    return Structure(length, frozenset(pairs))
