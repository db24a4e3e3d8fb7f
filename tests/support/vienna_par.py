"""An energy evaluator of our own for ViennaRNA 2.x parameter files (``.par``, format v2.0).

Test support: it computes the free energy of a nested secondary structure from a parameter file's tables
alone, following the loop decomposition of the ViennaRNA 2.x energy model with dangles = 2 (Lorenz et al.,
Algorithms Mol Biol 6:26, 2011; Turner & Mathews, NNDB, Nucleic Acids Res 38:D280, 2010): hairpins with
special tri-/tetra-/hexaloops and terminal mismatches, stacks, bulges (a 1-nt bulge keeps the stack),
1x1/2x1/2x2 interior-loop tables, 1xn and 2x3 loops with their mismatch tables, generic interior loops with
the Ninio asymmetry term, multiloops and the exterior loop with mismatch energies on both sides of every
stem, and terminal AU/GU penalties. Loops longer than 30 are extrapolated with lxc·ln(n/30). It shares no
code with ViennaRNA, so agreement with an energy ViennaRNA reports shows which parameter file was in effect.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

INF = 10_000_000
BASES = {"A": 1, "C": 2, "G": 3, "U": 4}
PAIR_TYPE = {("C", "G"): 1, ("G", "C"): 2, ("G", "U"): 3, ("U", "G"): 4, ("A", "U"): 5, ("U", "A"): 6}
MAXLOOP = 30
DEFAULT_LXC = 107.856


def _numbers(lines: list[str]) -> list[float]:
    out: list[float] = []
    for line in lines:
        for token in line.split():
            out.append(INF if token == "INF" else float(token))
    return out


@dataclass
class Parameters:
    """The tables of one ``.par`` file, indexed like ViennaRNA's (pair types 1..7, bases 0..4 = N A C G U)."""

    tables: dict[str, list[float]] = field(default_factory=dict)
    special: dict[int, dict[str, int]] = field(default_factory=dict)  # loop size -> sequence -> energy

    @classmethod
    def parse(cls, text: str) -> Parameters:
        text = re.sub(r"/\*.*?\*/", " ", text.replace("\x00", ""), flags=re.S).split("#END")[0]
        params = cls()
        sections = re.split(r"^# (\S+)\s*$", text, flags=re.M)
        for name, body in zip(sections[1::2], sections[2::2], strict=True):
            lines = [x for x in body.splitlines() if x.strip()]
            if name in ("Hexaloops", "Tetraloops", "Triloops"):
                for line in lines:
                    seq, energy = line.split()[:2]
                    params.special.setdefault(len(seq) - 2, {})[seq] = int(energy)
            elif name != "END":
                params.tables[name] = _numbers(lines)
        return params

    # -- table access ------------------------------------------------------------------------------------
    def _at(self, name: str, index: int) -> int:
        return int(self.tables[name][index])

    def stack(self, t1: int, t2: int) -> int:
        return self._at("stack", (t1 - 1) * 7 + (t2 - 1))

    def mismatch(self, name: str, t: int, a: int, b: int) -> int:
        return self._at(name, (t - 1) * 25 + a * 5 + b)

    def dangle(self, name: str, t: int, a: int) -> int:
        return self._at(name, (t - 1) * 5 + a)

    def int11(self, t1: int, t2: int, a: int, b: int) -> int:
        return self._at("int11", ((t1 - 1) * 7 + (t2 - 1)) * 25 + a * 5 + b)

    def int21(self, t1: int, t2: int, a: int, b: int, c: int) -> int:
        return self._at("int21", ((t1 - 1) * 7 + (t2 - 1)) * 125 + a * 25 + b * 5 + c)

    def int22(self, t1: int, t2: int, a: int, b: int, c: int, d: int) -> int:
        # Only canonical pair types and the four bases are tabulated.
        return self._at(
            "int22", ((t1 - 1) * 6 + (t2 - 1)) * 256 + (a - 1) * 64 + (b - 1) * 16 + (c - 1) * 4 + d - 1
        )

    def loop(self, name: str, size: int) -> int:
        if size <= MAXLOOP:
            return self._at(name, size)
        return self._at(name, MAXLOOP) + int(self.lxc * math.log(size / MAXLOOP))

    @property
    def terminal_au(self) -> int:
        return int(self.tables["Misc"][2])

    @property
    def lxc(self) -> float:
        misc = self.tables["Misc"]
        return misc[4] if len(misc) > 4 else DEFAULT_LXC

    @property
    def ninio(self) -> tuple[int, int]:
        m, _m_dh, maximum = self.tables["NINIO"][:3]
        return int(m), int(maximum)

    @property
    def ml(self) -> tuple[int, int, int]:
        base, _, closing, _, intern, _ = self.tables["ML_params"][:6]
        return int(base), int(closing), int(intern)


def _pairs_of(structure: str) -> dict[int, int]:
    stack, partner = [], {}
    for k, c in enumerate(structure, 1):
        if c == "(":
            stack.append(k)
        elif c == ")":
            i = stack.pop()
            partner[i], partner[k] = k, i
    return partner


def evaluate(params: Parameters, sequence: str, structure: str) -> float:
    """Free energy (kcal/mol) of a nested ``structure`` of ``sequence`` (canonical pairs only)."""
    seq = sequence.upper().replace("T", "U")
    n = len(seq)
    s = [0] + [BASES.get(c, 0) for c in seq] + [0]
    partner = _pairs_of(structure)

    def ptype(i: int, j: int) -> int:
        return PAIR_TYPE[(seq[i - 1], seq[j - 1])]

    def rtype(i: int, j: int) -> int:  # type of the pair read from the inside, (j, i)
        return PAIR_TYPE[(seq[j - 1], seq[i - 1])]

    def stem_mismatch(table: str, t: int, five: int | None, three: int | None) -> int:
        # dangles = 2: both neighbours count, whether paired or not; only the sequence ends lack one. The
        # model only lets dangling ends stabilise: a positive tabulated value counts as 0 (ViennaRNA does
        # the same when it scales the tables; it matters for the evolved Langdon 2018 set).
        if five is not None and three is not None:
            e = params.mismatch(table, t, s[five], s[three])
        elif five is not None:
            e = params.dangle("dangle5", t, s[five])
        elif three is not None:
            e = params.dangle("dangle3", t, s[three])
        else:
            e = 0
        return min(e, 0) + (params.terminal_au if t > 2 else 0)

    def hairpin(i: int, j: int) -> int:
        size, t = j - i - 1, ptype(i, j)
        e = params.loop("hairpin", size)
        special = params.special.get(size, {}).get(seq[i - 1 : j])
        if special is not None:
            return special
        if size == 3:
            return e + (params.terminal_au if t > 2 else 0)
        return e + params.mismatch("mismatch_hairpin", t, s[i + 1], s[j - 1])

    def interior(i: int, j: int, p: int, q: int) -> int:
        t, t2 = ptype(i, j), rtype(p, q)
        n1, n2 = p - i - 1, j - q - 1
        nl, ns = max(n1, n2), min(n1, n2)
        si, sj, sp, sq = s[i + 1], s[j - 1], s[p - 1], s[q + 1]
        if nl == 0:
            return params.stack(t, t2)
        if ns == 0:
            e = params.loop("bulge", nl)
            if nl == 1:
                return e + params.stack(t, t2)
            return e + (params.terminal_au if t > 2 else 0) + (params.terminal_au if t2 > 2 else 0)
        m, max_ninio = params.ninio
        if ns == 1 and nl == 1:
            return params.int11(t, t2, si, sj)
        if ns == 1 and nl == 2:
            return params.int21(t, t2, si, sq, sj) if n1 == 1 else params.int21(t2, t, sq, si, sp)
        if ns == 1:
            e = params.loop("internal", nl + 1) + min(max_ninio, (nl - ns) * m)
            return (
                e
                + params.mismatch("mismatch_internal_1n", t, si, sj)
                + params.mismatch("mismatch_internal_1n", t2, sq, sp)
            )
        if ns == 2 and nl == 2:
            return params.int22(t, t2, si, sp, sq, sj)
        if ns == 2 and nl == 3:
            e = params.loop("internal", 5) + m
            return (
                e
                + params.mismatch("mismatch_internal_23", t, si, sj)
                + params.mismatch("mismatch_internal_23", t2, sq, sp)
            )
        e = params.loop("internal", nl + ns) + min(max_ninio, (nl - ns) * m)
        return (
            e
            + params.mismatch("mismatch_internal", t, si, sj)
            + params.mismatch("mismatch_internal", t2, sq, sp)
        )

    def branches(i: int, j: int) -> list[tuple[int, int]]:
        out, k = [], i + 1
        while k < j:
            if k in partner and partner[k] > k:
                out.append((k, partner[k]))
                k = partner[k] + 1
            else:
                k += 1
        return out

    def loop_energy(i: int, j: int) -> int:
        inner = branches(i, j)
        if not inner:
            return hairpin(i, j)
        if len(inner) == 1:
            return interior(i, j, *inner[0])
        base, closing, intern = params.ml
        unpaired = (j - i - 1) - sum(q - p + 1 for p, q in inner)
        e = closing + intern + base * unpaired + stem_mismatch("mismatch_multi", rtype(i, j), j - 1, i + 1)
        for p, q in inner:
            e += intern + stem_mismatch("mismatch_multi", ptype(p, q), p - 1, q + 1)
        return e

    total = 0
    for p, q in branches(0, n + 1):
        total += stem_mismatch(
            "mismatch_exterior", ptype(p, q), p - 1 if p > 1 else None, q + 1 if q < n else None
        )
    for i, j in partner.items():
        if i < j:
            total += loop_energy(i, j)
    return total / 100
