"""Real RNA STRAND sequences picked by length (for cross-checks and timing runs), read from the archive."""

from __future__ import annotations

import tarfile
from pathlib import Path

from comparna.rna.formats import read_bpseq


def strand_sequences(archive: Path) -> dict[str, str]:
    """Entry id -> sequence (upper case, T -> U) of every RNA STRAND entry made of A, C, G and U only."""
    out: dict[str, str] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            if not member.name.endswith(".bpseq") or "/." in member.name:
                continue
            try:
                seq, _structure = read_bpseq(tar.extractfile(member).read().decode(errors="replace"))
            except ValueError:
                continue
            seq = seq.upper().replace("T", "U")
            if seq and set(seq) <= set("ACGU"):
                out[Path(member.name).stem] = seq
    return out


def pick_by_length(
    sequences: dict[str, str], length: int, count: int, *, tolerance: float = 0.1
) -> list[str]:
    """``count`` entry ids whose length is within ``tolerance`` of ``length``, closest first (then by id)."""
    near = [
        (abs(len(seq) - length), entry)
        for entry, seq in sequences.items()
        if abs(len(seq) - length) <= tolerance * length
    ]
    return [entry for _d, entry in sorted(near)[:count]]
