"""Reading and writing secondary structures: dot-bracket, BPSEQ, CT, FASTA and a JSON pair list.

Every reader raises :class:`~comparna.rna.structure.StructureFormatError` naming the line and/or position
of the first problem; nothing malformed is silently repaired (SCIENCE.md §1). Positions are 1-based.

Only the JSON pair list carries multiplets; dot-bracket, BPSEQ and CT writers refuse them. Sequences are
returned as written in the file (case preserved, no T->U): filtering and normalisation belong to ingest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

# The JSON pair list's reader lives in its own module (hostile JSON needs care); its names are re-exported.
from comparna.rna.pair_json import load_json, pair_json_structure, read_pair_json
from comparna.rna.structure import BRACKETS, Structure, StructureFormatError, bracket_levels

__all__ = [
    "parse_dot_bracket",
    "write_dot_bracket",
    "read_bpseq",
    "write_bpseq",
    "read_ct",
    "read_ct_all",
    "write_ct",
    "read_fasta",
    "write_fasta",
    "load_json",
    "pair_json_structure",
    "read_pair_json",
    "write_pair_json",
    "read_structure",
]

_OPEN = {o: level for level, (o, _) in enumerate(BRACKETS)}
_CLOSE = {c: level for level, (_, c) in enumerate(BRACKETS)}
UNPAIRED = "."
# ViennaRNA prints "((...)) (-3.40)" or "((...)) ( -3.40)"; the energy is dropped, never interpreted.
_ENERGY = re.compile(r"\s+\(\s*[-+]?(\d+(\.\d*)?|\.\d+)\s*\)\s*$")


# --------------------------------------------------------------------------------------------------------
# dot-bracket


def parse_dot_bracket(text: str, *, length: int | None = None) -> Structure:
    """Parse one dot-bracket line with brackets ``()[]{}<>`` and ``Aa``, ``Bb``, ... ``Zz``.

    Parameters
    ----------
    text : str
        The structure line; surrounding whitespace and a ViennaRNA-style trailing free energy in
        parentheses separated by whitespace (``"((...)) (-3.40)"``) are accepted and ignored.
    length : int, optional
        Expected sequence length; a different structure length is an error.

    Returns
    -------
    Structure

    Raises
    ------
    StructureFormatError
        On an unknown character, an unmatched bracket (position of the bracket), several lines, or a
        length mismatch.
    """
    line = text.strip()
    if "\n" in line or "\r" in line:
        raise StructureFormatError("a dot-bracket structure must be a single line", line=2)
    line = _ENERGY.sub("", line)
    stacks: list[list[int]] = [[] for _ in BRACKETS]
    pairs = []
    for pos, ch in enumerate(line, start=1):
        if ch == UNPAIRED:
            continue
        if ch in _OPEN:
            stacks[_OPEN[ch]].append(pos)
        elif ch in _CLOSE:
            stack = stacks[_CLOSE[ch]]
            if not stack:
                raise StructureFormatError(f"closing {ch!r} has no matching opening bracket", position=pos)
            pairs.append((stack.pop(), pos))
        else:
            raise StructureFormatError(f"unexpected character {ch!r} in dot-bracket", position=pos)
    for level, stack in enumerate(stacks):
        if stack:
            raise StructureFormatError(f"opening {BRACKETS[level][0]!r} is never closed", position=stack[-1])
    if length is not None and len(line) != length:
        raise StructureFormatError(
            f"dot-bracket has length {len(line)}, the sequence has length {length}",
            position=min(len(line), length) + 1,
        )
    return Structure(len(line), frozenset(pairs))


def write_dot_bracket(structure: Structure) -> str:
    """Write ``structure`` as dot-bracket, pseudoknot levels as assigned by :func:`bracket_levels`.

    Raises
    ------
    StructureFormatError
        If the structure has multiplets or needs more than 30 bracket levels.
    """
    levels = bracket_levels(structure.pairs)
    if len(levels) > len(BRACKETS):
        raise StructureFormatError(
            f"structure needs {len(levels)} bracket levels, dot-bracket has {len(BRACKETS)}"
        )
    chars = [UNPAIRED] * structure.length
    for (o, c), level in zip(BRACKETS, levels, strict=False):
        for i, j in level:
            chars[i - 1] = o
            chars[j - 1] = c
    return "".join(chars)


# --------------------------------------------------------------------------------------------------------
# BPSEQ and CT


def _data_lines(text: str) -> Iterable[tuple[int, list[str]]]:
    """Yield (line number, fields) for non-blank, non-'#' lines."""
    for n, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if s and not s.startswith("#"):
            yield n, s.split()


def _int(field: str, what: str, line: int) -> int:
    try:
        return int(field)
    except ValueError:
        raise StructureFormatError(f"{what} {field!r} is not an integer", line=line) from None


def _pairs_from_partners(partner: list[tuple[int, int]], fmt: str) -> Structure:
    """Check a per-base partner table (entries (partner, line)) for range, self-pairs and symmetry."""
    L = len(partner)
    pairs = set()
    for i, (j, line) in enumerate(partner, start=1):
        if j == 0:
            continue
        if j < 0 or j > L:
            raise StructureFormatError(
                f"{fmt}: base {i} paired to {j}, outside the sequence 1..{L}", line=line, position=i
            )
        if j == i:
            raise StructureFormatError(f"{fmt}: base {i} paired with itself", line=line, position=i)
        back, _ = partner[j - 1]
        if back != i:
            what = "unpaired" if back == 0 else f"paired to {back}"
            raise StructureFormatError(
                f"{fmt}: base {i} paired to {j}, but base {j} is {what} (asymmetric or base paired twice)",
                line=line,
                position=i,
            )
        pairs.add((min(i, j), max(i, j)))
    return Structure(L, frozenset(pairs))


def read_bpseq(text: str) -> tuple[str, Structure]:
    """Read a BPSEQ file: lines ``index base partner`` (0 = unpaired); '#' lines and blank lines skipped.

    Returns
    -------
    (str, Structure)
        The sequence (as written) and the structure.

    Raises
    ------
    StructureFormatError
        On a line without exactly three fields, non-consecutive indices, a partner out of range, a base
        paired with itself, or asymmetric partner entries (which is how a base paired twice shows).
    """
    seq: list[str] = []
    partner: list[tuple[int, int]] = []
    # Hot loop (RNA STRAND has a million lines): split once, convert with one try.
    for n, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if not fields or fields[0][0] == "#":
            continue
        if len(fields) != 3:
            raise StructureFormatError(
                f"BPSEQ line needs 3 fields 'index base partner', found {len(fields)}", line=n
            )
        try:
            idx, j = int(fields[0]), int(fields[2])
        except ValueError:
            _int(fields[0], "index", n)
            _int(fields[2], "partner", n)
            raise
        if idx != len(seq) + 1:
            raise StructureFormatError(f"BPSEQ index {idx}, expected {len(seq) + 1}", line=n, position=idx)
        seq.append(fields[1])
        partner.append((j, n))
    if not seq:
        raise StructureFormatError("BPSEQ input has no base lines")
    _check_bases(seq, partner, "BPSEQ")
    return "".join(seq), _pairs_from_partners(partner, "BPSEQ")


def _check_bases(seq: list[str], partner: list[tuple[int, int]], fmt: str) -> None:
    for pos, (base, (_, line)) in enumerate(zip(seq, partner, strict=True), start=1):
        if len(base) != 1:
            raise StructureFormatError(f"{fmt}: base {base!r} is not one character", line=line, position=pos)


def write_bpseq(sequence: str, structure: Structure) -> str:
    """Write BPSEQ (``index base partner`` per line). Refuses multiplets and a length mismatch."""
    partner = _partners_for_writing(sequence, structure)
    return "".join(f"{i} {b} {partner[i]}\n" for i, b in enumerate(sequence, start=1))


def _partners_for_writing(sequence: str, structure: Structure) -> list[int]:
    if len(sequence) != structure.length:
        raise StructureFormatError(
            f"sequence length {len(sequence)} differs from structure length {structure.length}"
        )
    for pos, ch in enumerate(sequence, start=1):
        if ch.isspace():
            raise StructureFormatError("whitespace in the sequence", position=pos)
    return [int(x) for x in structure.partner_array()]


def read_ct(text: str) -> tuple[str, Structure]:
    """Read the first structure of a CT file (further structures, if any, must be well-formed too).

    The header is ``N`` followed by anything (``"N  ENERGY = -3.4  name"``, ``"N dG = ..."``); then N
    lines ``index base prev next partner [natural-numbering]``. Blank and '#' lines are skipped.

    Raises
    ------
    StructureFormatError
        As :func:`read_bpseq`, plus a header that is not an integer or a wrong number of base lines.
    """
    return read_ct_all(text)[0]


def read_ct_all(text: str) -> list[tuple[str, Structure]]:
    """Read every structure of a (possibly multi-structure) CT file, e.g. suboptimals from RNAstructure."""
    lines = list(_data_lines(text))
    out = []
    k = 0
    if not lines:
        raise StructureFormatError("CT input is empty")
    while k < len(lines):
        n_header, header = lines[k]
        if out and _looks_like_base_line(header):
            raise StructureFormatError(
                f"more base lines than the {out[-1][1].length} announced by the CT header", line=n_header
            )
        count = _int(header[0], "CT header: sequence length", n_header)
        if count < 0:
            raise StructureFormatError(f"CT header: negative length {count}", line=n_header)
        body = lines[k + 1 : k + 1 + count]
        if len(body) < count:
            raise StructureFormatError(
                f"CT header announces {count} bases, found {len(body)}", line=n_header, position=len(body) + 1
            )
        seq: list[str] = []
        partner: list[tuple[int, int]] = []
        for n, fields in body:
            if len(fields) < 5:
                raise StructureFormatError(
                    f"CT line needs at least 5 fields 'index base prev next partner', found {len(fields)}",
                    line=n,
                )
            idx = _int(fields[0], "index", n)
            if idx != len(seq) + 1:
                raise StructureFormatError(f"CT index {idx}, expected {len(seq) + 1}", line=n, position=idx)
            for f, what in ((fields[2], "prev"), (fields[3], "next")):
                _int(f, what, n)
            seq.append(fields[1])
            partner.append((_int(fields[4], "partner", n), n))
        _check_bases(seq, partner, "CT")
        out.append(("".join(seq), _pairs_from_partners(partner, "CT")))
        k += 1 + count
    return out


def _looks_like_base_line(fields: list[str]) -> bool:
    return (
        len(fields) in (5, 6)
        and len(fields[1]) == 1
        and all(f.isascii() and f.lstrip("-").isdigit() for f in fields[:1] + fields[2:])
    )


def write_ct(sequence: str, structure: Structure, *, name: str = "") -> str:
    """Write CT: header ``"N  name"``, then ``index base index-1 index+1 partner index`` per base."""
    partner = _partners_for_writing(sequence, structure)
    L = len(sequence)
    rows = [f"{L}  {name}".rstrip() + "\n"]
    for i, b in enumerate(sequence, start=1):
        rows.append(f"{i} {b} {i - 1} {i + 1 if i < L else 0} {partner[i]} {i}\n")
    return "".join(rows)


# --------------------------------------------------------------------------------------------------------
# FASTA

_FASTA_OK = re.compile(r"[A-Za-z\-.*]+")


def read_fasta(text: str) -> list[tuple[str, str]]:
    """Read FASTA records as (name, sequence); name = first word of the header line.

    Sequence lines are concatenated with whitespace removed; blank lines and ';' comment lines are skipped.

    Raises
    ------
    StructureFormatError
        On sequence text before the first header, an empty name, an empty record or a character other
        than letters, '-', '.', '*' (line and column).
    """
    records: list[tuple[str, list[str]]] = []
    header_line = 0
    for n, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith(";"):
            continue
        if s.startswith(">"):
            if records and not records[-1][1]:
                raise StructureFormatError(
                    f"FASTA record {records[-1][0]!r} has no sequence", line=header_line
                )
            words = s[1:].split()
            if not words:
                raise StructureFormatError("FASTA header without a name", line=n)
            records.append((words[0], []))
            header_line = n
            continue
        if not records:
            raise StructureFormatError("FASTA sequence before the first '>' header", line=n)
        for col, ch in enumerate(raw, start=1):
            if not ch.isspace() and not _FASTA_OK.fullmatch(ch):
                raise StructureFormatError(
                    f"unexpected character {ch!r} in FASTA sequence", line=n, position=col
                )
        records[-1][1].append("".join(s.split()))
    if records and not records[-1][1]:
        raise StructureFormatError(f"FASTA record {records[-1][0]!r} has no sequence", line=header_line)
    return [(name, "".join(parts)) for name, parts in records]


def write_fasta(records: Iterable[tuple[str, str]], *, width: int = 80) -> str:
    """Write (name, sequence) records as FASTA, sequence lines wrapped at ``width`` (0 = no wrapping)."""
    out = []
    for name, seq in records:
        if not name or any(c.isspace() for c in name):
            raise StructureFormatError(f"FASTA name {name!r} is empty or contains whitespace")
        out.append(f">{name}\n")
        step = width if width > 0 else max(len(seq), 1)
        for k in range(0, len(seq), step):
            out.append(seq[k : k + step] + "\n")
    return "".join(out)


# --------------------------------------------------------------------------------------------------------
# JSON pair list


def write_pair_json(structure: Structure, sequence: str | None = None) -> str:
    """Write ``{"length": L, "pairs": [[i, j], ...]}`` (sorted; plus "sequence" when given)."""
    obj: dict[str, object] = {"length": structure.length}
    if sequence is not None:
        if len(sequence) != structure.length:
            raise StructureFormatError(
                f"sequence length {len(sequence)} differs from structure length {structure.length}"
            )
        obj["sequence"] = sequence
    obj["pairs"] = [list(p) for p in structure.sorted_pairs()]
    return json.dumps(obj)


# --------------------------------------------------------------------------------------------------------
# dispatch


def read_structure(text: str, fmt: str, *, length: int | None = None) -> tuple[str | None, Structure]:
    """Read a structure in the named format: "dot-bracket", "bpseq", "ct" or "json".

    Returns the sequence found in the file (None for dot-bracket and JSON) and the structure; when
    ``length`` is given, a structure of another length is an error (required for "json").
    """
    fmt = fmt.lower()
    if fmt in ("dot-bracket", "dotbracket", "dbn", "db"):
        return None, parse_dot_bracket(text, length=length)
    if fmt in ("json", "pairs"):
        if length is None:
            raise StructureFormatError("a JSON pair list needs the sequence length")
        return None, read_pair_json(text, length=length)
    if fmt in ("bpseq", "ct"):
        seq, s = read_bpseq(text) if fmt == "bpseq" else read_ct(text)
        if length is not None and s.length != length:
            raise StructureFormatError(
                f"{fmt.upper()} structure has {s.length} bases, the sequence has length {length}"
            )
        return seq, s
    raise StructureFormatError(f"unknown structure format {fmt!r}")
