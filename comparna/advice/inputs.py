"""What a user may paste into the advisor, read and checked with an error that names the problem.

Pure module (standard library only): one raw sequence or a FASTA of up to :data:`MAX_SEQUENCES` records,
each of A, C, G, U or T (any case; T is read as U) and at most :data:`MAX_LENGTH` nucleotides. Anything
else is refused before anything is stored or queued.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SEQUENCES = 10
MAX_LENGTH = 1000
MIN_LENGTH = 10
#: The whole paste: ten sequences of 1000 nt with headers and line breaks fit well below it.
MAX_CHARACTERS = 20_000
NAME_CHARS = 60
ALLOWED = frozenset("ACGUT")


class AdviceInputError(ValueError):
    """The input cannot be taken; the message says why, in words for the page."""


@dataclass(frozen=True)
class QuerySequence:
    """One sequence of a request: its name (its FASTA header, or "sequence 1") and its bases (A/C/G/U)."""

    name: str
    sequence: str

    @property
    def gc_content(self) -> float:
        return (self.sequence.count("G") + self.sequence.count("C")) / len(self.sequence)


def _records(text: str) -> list[tuple[str, str, int]]:
    """(name, raw sequence text, first line) of each record: FASTA when the text has a '>' header line,
    else the whole text as one sequence."""
    lines = text.splitlines()
    if not any(line.lstrip().startswith(">") for line in lines):
        return [("sequence 1", "".join(text.split()), 1)]
    records: list[tuple[str, list[str], int]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(">"):
            name = " ".join(stripped[1:].split())[:NAME_CHARS] or f"sequence {len(records) + 1}"
            records.append((name, [], number))
        elif not records:
            raise AdviceInputError(f"line {number}: sequence text before the first '>' header line")
        else:
            records[-1][1].append("".join(stripped.split()))
    return [(name, "".join(parts), line) for name, parts, line in records]


def read_sequences(text: str | None) -> list[QuerySequence]:
    """The sequences of a paste, checked.

    Raises
    ------
    AdviceInputError
        On an empty input, more than :data:`MAX_CHARACTERS` characters, more than :data:`MAX_SEQUENCES`
        sequences, an empty record, a symbol other than A/C/G/U/T (named with its sequence and position), or a
        sequence shorter than :data:`MIN_LENGTH` or longer than :data:`MAX_LENGTH` nucleotides.
    """
    text = text or ""
    if len(text) > MAX_CHARACTERS:
        raise AdviceInputError(
            f"the input has {len(text):,} characters; at most {MAX_CHARACTERS:,} are accepted "
            f"({MAX_SEQUENCES} sequences of up to {MAX_LENGTH} nt)"
        )
    if not text.strip():
        raise AdviceInputError("the input is empty: paste one sequence or a FASTA of up to "
                               f"{MAX_SEQUENCES} sequences")
    records = _records(text)
    if len(records) > MAX_SEQUENCES:
        raise AdviceInputError(f"{len(records)} sequences; at most {MAX_SEQUENCES} are accepted at once")
    out = []
    for index, (name, raw, line) in enumerate(records, start=1):
        where = f"sequence {index}" + (f" ({name})" if name != f"sequence {index}" else "")
        if not raw:
            raise AdviceInputError(f"{where} (line {line}) is empty")
        for position, symbol in enumerate(raw, start=1):
            if symbol.upper() not in ALLOWED:
                shown = symbol if symbol.isprintable() else f"U+{ord(symbol):04X}"
                raise AdviceInputError(
                    f"{where}: {shown!r} at position {position} is not a nucleotide "
                    "(only A, C, G, U and T are accepted)"
                )
        if len(raw) > MAX_LENGTH:
            raise AdviceInputError(f"{where} has {len(raw)} nt; at most {MAX_LENGTH} nt are accepted")
        if len(raw) < MIN_LENGTH:
            raise AdviceInputError(f"{where} has {len(raw)} nt; at least {MIN_LENGTH} nt are needed")
        out.append(QuerySequence(name=name, sequence=raw.upper().replace("T", "U")))
    return out
