"""Canonical text form of a structure for storage: sorted pairs ``"i-j i-j ..."`` (1-based).

Unlike dot-bracket it carries multiplets and pseudoknots of any order, and two equal structures always
give the same text, so it can be compared and indexed.
"""

from __future__ import annotations

from comparna.rna.structure import Structure, StructureFormatError


def structure_to_text(structure: Structure) -> str:
    """Return the canonical pair text of ``structure`` (empty string when unpaired)."""
    return " ".join(f"{i}-{j}" for i, j in structure.sorted_pairs())


def structure_from_text(length: int, text: str) -> Structure:
    """Parse the canonical pair text; raises StructureFormatError naming the bad token."""
    pairs = []
    for n, token in enumerate(text.split(), start=1):
        left, sep, right = token.partition("-")
        # ASCII digits only: str.isdigit() also accepts "²", which int() rejects.
        if not sep or not (left + right).isascii() or not left.isdigit() or not right.isdigit():
            raise StructureFormatError(f"pair token {token!r} is not 'i-j'", position=n)
        pairs.append((int(left), int(right)))
    return Structure.from_pairs(length, pairs)
