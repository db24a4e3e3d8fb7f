"""What the advisor's page shows of finished runs: each structure, their agreement and their consensus.

Pure functions of the stored results (plain dicts): the agreement of two predictions is the MCC of one
against the other taken as the reference (SCIENCE.md §2 counts, exact pairs); a consensus pair is one
predicted by at least half of the finished runs, with its support.
"""

from __future__ import annotations

import json
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


def pairing_profile(result: dict, length: int) -> dict | None:
    """What a probabilistic method's run says beyond its structure (None when it gave no probabilities):
    each nucleotide's probability of being paired (the sum of its kept base-pair probabilities, at most 1),
    drawn as an SVG path of bars one unit wide in a ``length`` × 40 box; the mean probability of the pairs
    of the predicted structure; the pairs at p ≥ 0.5."""
    kept = result.get("probabilities")
    if not kept:
        return None
    paired = [0.0] * length
    lookup = {}
    for i, j, p in kept:
        i, j, p = int(i), int(j), float(p)
        if 1 <= i < j <= length:
            paired[i - 1] += p
            paired[j - 1] += p
            lookup[(i, j)] = p
    paired = [min(1.0, x) for x in paired]
    support = [lookup.get((int(i), int(j)), 0.0) for i, j in result.get("pairs") or []]
    path = "".join(f"M{k} 40V{40 - 40 * x:.1f}h1V40" for k, x in enumerate(paired) if x >= 0.005)
    return {
        "paired": [round(x, 3) for x in paired],
        "path": path or "M0 40",
        "pairs_mean": round(sum(support) / len(support), 3) if support else None,
        "likely": sum(1 for p in lookup.values() if p >= 0.5),
        "kept": len(lookup),
    }


def export(sequence: str, structure: Structure, fmt: str, *, name: str,
           probabilities: list | None = None) -> str:
    """The structure as dot-bracket (nested pairs and pseudoknot brackets), BPSEQ, CT or pairs JSON (with the
    kept base-pair probabilities, when the method gave them)."""
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
        text = write_pair_json(structure, sequence)
        if probabilities:
            obj = json.loads(text)
            obj["probabilities"] = [[int(i), int(j), float(p)] for i, j, p in probabilities]
            text = json.dumps(obj)
        return text
    raise ValueError(f"unknown format {fmt!r}")
