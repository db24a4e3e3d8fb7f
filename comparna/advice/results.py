"""What the advisor's page shows of finished runs: each structure, their agreement and their consensus.

Pure functions of the stored results (plain dicts): the agreement of two predictions is the MCC of one
against the other taken as the reference (SCIENCE.md §2 counts, exact pairs); a consensus pair is one
predicted by at least half of the finished runs, with its support.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from comparna.rna.formats import write_bpseq, write_ct, write_dot_bracket, write_pair_json
from comparna.rna.layout import dot_bracket_of_nested, layout_pairs
from comparna.rna.metrics import count_pairs
from comparna.rna.structure import Structure, StructureFormatError

FORMATS = {"dbn": "text/plain", "bpseq": "text/plain", "ct": "text/plain", "json": "application/json"}


def structure_of(result: dict, length: int) -> Structure | None:
    """The structure of a finished run's stored result, None when it has none."""
    pairs = result.get("pairs")
    if pairs is None:
        return None
    return Structure(length, frozenset((int(i), int(j)) for i, j in pairs))


def agreement(structures: Sequence[Structure]) -> list[list[float | None]]:
    """MCC of every prediction (column) against every other (row) taken as the reference; None on the
    diagonal."""
    out: list[list[float | None]] = []
    for a, ref in enumerate(structures):
        row: list[float | None] = []
        for b, pred in enumerate(structures):
            row.append(None if a == b else round(count_pairs(ref, pred).mcc, 3))
        out.append(row)
    return out


def consensus(structures: Sequence[Structure], length: int) -> dict:
    """Pairs predicted by at least half of the structures, with their support, and the nested part of
    them as dot-bracket."""
    if not structures:
        return {"pairs": [], "dot_bracket": "", "of": 0}
    support = Counter(p for s in structures for p in s.pairs)
    need = (len(structures) + 1) // 2
    kept = sorted((p, n) for p, n in support.items() if n >= need)
    return {
        "pairs": [{"i": i, "j": j, "support": n} for (i, j), n in kept],
        "dot_bracket": dot_bracket_of_nested(length, layout_pairs(p for p, _ in kept)),
        "of": len(structures),
        "need": need,
    }


def export(sequence: str, structure: Structure, fmt: str, *, name: str) -> str:
    """The structure as dot-bracket (nested pairs and pseudoknot brackets), BPSEQ, CT or pairs JSON."""
    if fmt == "dbn":
        try:
            text = write_dot_bracket(structure)
        except StructureFormatError:  # bases in several pairs: not writable as brackets
            text = dot_bracket_of_nested(len(sequence), layout_pairs(structure.pairs))
        return f">{name}\n{sequence}\n{text}\n"
    if fmt == "bpseq":
        return write_bpseq(sequence, structure)
    if fmt == "ct":
        return write_ct(sequence, structure, name=name)
    if fmt == "json":
        return write_pair_json(structure, sequence)
    raise ValueError(f"unknown format {fmt!r}")
