"""Parsers of predictor output, one per output format, looked up by name in :data:`PARSERS`.

Every parser takes the program's output text and the input sequence and returns a
:class:`ParsedPrediction`, or raises :class:`~comparna.rna.structure.StructureFormatError` whose message
is recorded with an ``unparsable`` outcome. A structure whose length differs from the input sequence is
unparsable: it cannot be scored against the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from comparna.rna.formats import load_json, pair_json_structure, parse_dot_bracket, read_bpseq, read_ct
from comparna.rna.structure import Structure, StructureFormatError

#: Sparse base-pair probabilities: (i, j, p), 1-based, i < j, 0 < p <= 1, sorted by (i, j).
Probabilities = tuple[tuple[int, int, float], ...]


@dataclass(frozen=True)
class ParsedPrediction:
    """A parsed prediction: the structure and, for probabilistic methods, sparse pair probabilities."""

    structure: Structure
    probabilities: Probabilities | None = None


Parser = Callable[[str, str], ParsedPrediction]


def _same_sequence(a: str, b: str) -> bool:
    # Programs echo the sequence in upper case and sometimes with T->U; compare the way they do.
    return a.upper().replace("T", "U") == b.upper().replace("T", "U")


def _check_length(found: int, sequence: str, fmt: str) -> None:
    if found != len(sequence):
        raise StructureFormatError(
            f"{fmt} output has {found} nucleotides, the input sequence has {len(sequence)}"
        )


def parse_dot_bracket_output(text: str, sequence: str) -> ParsedPrediction:
    """ViennaRNA-style output: optional ``>header``, optional sequence line, structure [energy].

    The first line that is neither a header, a comment, nor the echoed sequence must be the structure;
    its first whitespace-separated field is parsed, so energy suffixes such as ``(-3.40)`` or
    ``-3.4`` are ignored.
    """
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(">") or line.startswith("#"):
            continue
        first = line.split()[0]
        if _same_sequence(first, sequence) and any(c.isalpha() for c in first):
            continue
        try:
            structure = parse_dot_bracket(first, length=len(sequence))
        except StructureFormatError as exc:
            raise StructureFormatError(str(exc), line=lineno) from None
        return ParsedPrediction(structure)
    raise StructureFormatError(f"no dot-bracket structure line in the output ({len(text)} characters)")


def parse_bpseq_output(text: str, sequence: str) -> ParsedPrediction:
    """BPSEQ: ``index base partner`` per line."""
    seq, structure = read_bpseq(text)
    _check_length(len(seq), sequence, "BPSEQ")
    return ParsedPrediction(structure)


def parse_ct_output(text: str, sequence: str) -> ParsedPrediction:
    """CT (first structure when there are several)."""
    seq, structure = read_ct(text)
    _check_length(len(seq), sequence, "CT")
    return ParsedPrediction(structure)


def parse_probabilities(items: object, length: int) -> Probabilities:
    """Validate ``[[i, j, p], ...]`` (1-based, either orientation) into sorted :data:`Probabilities`.

    Raises
    ------
    StructureFormatError
        For a malformed entry, a position outside 1..length, i == j, p outside (0, 1] or a repeated pair.
    """
    if not isinstance(items, list):
        raise StructureFormatError("'probabilities' must be a list of [i, j, p]")
    out: dict[tuple[int, int], float] = {}
    for k, item in enumerate(items):
        if not (isinstance(item, list | tuple) and len(item) == 3):
            raise StructureFormatError(f"probabilities[{k}] is not [i, j, p]")
        i, j, p = item
        if not (isinstance(i, int) and isinstance(j, int)) or isinstance(i, bool) or isinstance(j, bool):
            raise StructureFormatError(f"probabilities[{k}]: positions must be integers")
        # Integers are compared, never converted (a huge one overflows a float and cannot be printed).
        finite = not isinstance(p, float) or math.isfinite(p)
        if not isinstance(p, int | float) or isinstance(p, bool) or not finite:
            raise StructureFormatError(f"probabilities[{k}]: probability must be a finite number")
        # Partition functions can round a little above 1; anything clearly above is a broken program.
        if not 0 < p <= 1 + 1e-6:
            shown = p if isinstance(p, float) or abs(p) < 10**15 else "a huge integer"
            raise StructureFormatError(f"probabilities[{k}]: probability {shown} is not in (0, 1]")
        if i == j or not (1 <= i <= length and 1 <= j <= length):
            shown = tuple(x if abs(x) < 10**15 else "<huge>" for x in (i, j))
            raise StructureFormatError(f"probabilities[{k}]: pair {shown} not within 1..{length}")
        key = (i, j) if i < j else (j, i)
        if key in out:
            raise StructureFormatError(f"probabilities[{k}]: pair {key} given twice")
        out[key] = min(float(p), 1.0)
    return tuple((i, j, p) for (i, j), p in sorted(out.items()))


def parse_pairs_json_output(text: str, sequence: str) -> ParsedPrediction:
    """Our wrappers' JSON: ``{"pairs": [[i, j], ...], "probabilities": [[i, j, p], ...]}`` (1-based).

    ``probabilities`` is optional; a ``length`` field, when present, must equal the sequence length.
    """
    data = load_json(text)  # every syntax or number problem is a StructureFormatError
    structure = pair_json_structure(data, length=len(sequence))  # also checks "length"
    if not isinstance(data, dict):
        return ParsedPrediction(structure)
    probs = data.get("probabilities")
    return ParsedPrediction(structure, None if probs is None else parse_probabilities(probs, len(sequence)))


#: Output format name -> parser. Specs name one of these keys; there is no dispatch on method names.
PARSERS: dict[str, Parser] = {
    "dot-bracket": parse_dot_bracket_output,
    "bpseq": parse_bpseq_output,
    "ct": parse_ct_output,
    "pairs-json": parse_pairs_json_output,
}


def parse_output(output_format: str, text: str, sequence: str) -> ParsedPrediction:
    """Parse ``text`` with the parser registered for ``output_format`` (``KeyError`` if unknown).

    Whatever goes wrong while parsing is a :class:`StructureFormatError`: the text is a program's or a
    user's, and an exception of another kind would not end the run in a final ``unparsable`` outcome
    (it would put the prediction back in the queue, issue 26).
    """
    parser = PARSERS[output_format]
    try:
        return parser(text, sequence)
    except StructureFormatError:
        raise
    except RecursionError:
        raise StructureFormatError(f"{output_format} output is nested too deeply") from None
    except (ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError) as exc:
        message = f"{output_format} output: {type(exc).__name__}: {str(exc)[:200]}"
        raise StructureFormatError(message) from None
