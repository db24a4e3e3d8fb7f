"""Residue correspondence between an announced sequence and a released chain, and scoring windows.

A blind target is predicted on the sequence announced before the release (the whole polymer); the released
chain's reference pairs are on its *observed* residues, often a few terminal nucleotides fewer. The chain is
aligned to the target (identical substring when possible, else a global alignment with free end gaps), and
a prediction is scored on the target positions that have an observed residue: pairs of the prediction with
an unobserved position can be neither confirmed nor refuted, so they are left out, not counted as false
positives (as CASP and CAMEO assess only the residues present in the experimental model).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from comparna.rna.structure import Structure


@dataclass(frozen=True)
class ChainMap:
    """``positions[k]`` = the target position (1-based) of the chain's residue k+1, or None (unaligned).

    ``identity``: identical aligned residues / chain length; ``coverage``: aligned residues / target length.
    """

    target_length: int
    positions: tuple[int | None, ...]
    identity: float
    coverage: float

    @property
    def window(self) -> tuple[int, ...]:
        """Target positions with an aligned chain residue, ascending."""
        return tuple(sorted(p for p in self.positions if p is not None))

    def ranges(self) -> list[list[int]]:
        """The window as ``[[first, last], ...]`` runs of consecutive positions."""
        out: list[list[int]] = []
        for p in self.window:
            if out and p == out[-1][1] + 1:
                out[-1][1] = p
            else:
                out.append([p, p])
        return out


def map_chain(target: str, chain: str) -> ChainMap:
    """Align ``chain`` (observed residues, parent letters) to ``target`` (the announced sequence)."""
    target, chain = target.upper(), chain.upper()
    if not target or not chain:
        return ChainMap(len(target), tuple(None for _ in chain), 0.0, 0.0)
    start = target.find(chain)
    if start >= 0:
        positions = tuple(range(start + 1, start + len(chain) + 1))
        return ChainMap(len(target), positions, 1.0, len(chain) / len(target))
    from Bio.Align import PairwiseAligner  # Biopython: only when the chain is not a plain substring

    aligner = PairwiseAligner()
    aligner.mode = "global"
    aligner.match_score, aligner.mismatch_score = 2.0, -1.0
    aligner.open_gap_score, aligner.extend_gap_score = -3.0, -1.0
    aligner.end_gap_score = 0.0  # missing terminal residues cost nothing
    alignment = aligner.align(target, chain)[0]
    mapped: list[int | None] = [None] * len(chain)
    same = 0
    for (t0, t1), (c0, _c1) in zip(*alignment.aligned.tolist(), strict=True):
        for k in range(t1 - t0):
            mapped[c0 + k] = t0 + k + 1
            same += target[t0 + k] == chain[c0 + k]
    aligned = sum(p is not None for p in mapped)
    return ChainMap(len(target), tuple(mapped), same / len(chain), aligned / len(target))


def chain_pairs_on_target(pairs: Iterable[Sequence[int]], chain_map: ChainMap) -> list[tuple[int, int]]:
    """Chain pairs (1-based chain positions) renumbered to target positions; pairs with an unaligned
    residue are dropped."""
    out = []
    for pair in pairs:
        i, j = chain_map.positions[pair[0] - 1], chain_map.positions[pair[1] - 1]
        if i is not None and j is not None:
            out.append((min(i, j), max(i, j)))
    return sorted(out)


def restrict(pairs: Iterable[Sequence[int]], window: Sequence[int]) -> Structure:
    """The pairs with both positions in ``window``, renumbered 1..len(window) in window order."""
    index = {p: k for k, p in enumerate(window, start=1)}
    kept = [(index[i], index[j]) for i, j, *_ in pairs if i in index and j in index]
    return Structure.from_pairs(len(window), kept)
