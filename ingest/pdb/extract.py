"""Chain extraction from PDB/mmCIF files with gemmi (SCIENCE.md §3, PDB data set).

For every nucleic-acid polymer chain of the first model this module gives the renumbered sequence
(1..L, modified residues replaced by their parent nucleotide), the map back to author numbering and the
reasons, if any, for which the chain cannot be a benchmark target:

* DNA chains and RNA-DNA hybrid chains;
* residues whose parent nucleotide cannot be determined from the file or gemmi's residue table;
* length <= 20 nt (the data set keeps chains longer than 20 nt);
* backbone breaks: a missing O3' or P atom, or an O3'(i)-P(i+1) distance above
  :data:`MAX_O3P_DISTANCE`.

Pair-based exclusions (a chain that pairs only with other strands, RNA paired with DNA, no standard pair)
need the annotation and are added by :mod:`ingest.pdb.annotate`.

Parent nucleotides of modified residues are taken from the file's own chemical-component data first,
because that is what the PDB curated for this entry, and from gemmi's tabulated components last:

1. ``_chem_comp.mon_nstd_parent_comp_id`` (present in files carrying full CCD records);
2. ``_pdbx_struct_mod_residue.parent_comp_id`` (mmCIF) or ``MODRES`` records (PDB format);
3. the canonical sequence ``_entity_poly.pdbx_seq_one_letter_code_can`` (or PDB SEQRES through gemmi) at
   the residue's ``label_seq_id`` - the PDB fills it with the parent of every modified residue; this is
   what resolves 1EHZ's 5MC and YYG, which are not in gemmi's table;
4. gemmi's built-in component table (``gemmi.find_tabulated_residue``: 1MA -> a, PSU -> u, ...).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import gemmi

from comparna.bounded import TooLarge, gunzip_capped

#: Largest decompressed structure file read (the largest mmCIF entries, ribosomes, are a few hundred MB).
MAX_STRUCTURE_BYTES = 2 * 2**30

#: Chains must be longer than this (SCIENCE.md §3: "length > 20 nt").
MIN_LENGTH_EXCLUSIVE = 20

#: O3'(i)-P(i+1) distance above which the backbone is considered broken, in Å. The covalent bond is
#: 1.60 Å; across the shared test entries (1EHZ, 1GID, 4QLN, 6G90, 8BTK, ...) every bonded link measures
#: 1.55-1.65 Å while every real gap measures > 6 Å. 2.0 Å leaves room for poorly refined models without
#: accepting any non-bonded contact (RNApolis' own gap finder uses 2.4 Å = 1.5 x 1.6 Å).
MAX_O3P_DISTANCE = 2.0

RNA = "RNA"
DNA = "DNA"
UNKNOWN = "unknown"

_STANDARD = {
    "A": ("A", RNA), "C": ("C", RNA), "G": ("G", RNA), "U": ("U", RNA),
    "DA": ("A", DNA), "DC": ("C", DNA), "DG": ("G", DNA), "DT": ("T", DNA), "DU": ("U", DNA),
    "N": ("N", RNA), "DN": ("N", DNA),
}
_NUCLEOTIDE_LETTERS = frozenset("ACGUT")

#: Ring atoms of each parent base: the atoms base-pair annotation needs (the Watson-Crick, Hoogsteen and
#: sugar edges are read off them). Exocyclic atoms are not required: modifications replace some of them
#: (4-thiouridine's S4 for O4, 2-thiouridine's S2 for O2) without changing how the base pairs.
PURINE_RING = ("N9", "C8", "N7", "C5", "C6", "N1", "C2", "N3", "C4")
PYRIMIDINE_RING = ("N1", "C2", "N3", "C4", "C5", "C6")
BASE_RING_ATOMS = {"A": PURINE_RING, "G": PURINE_RING, "C": PYRIMIDINE_RING, "U": PYRIMIDINE_RING,
                   "T": PYRIMIDINE_RING}


class StructureFileError(ValueError):
    """The file cannot be read as a PDB or mmCIF structure (missing, not gzip, malformed, no atoms)."""


@dataclass(frozen=True, order=True)
class AuthorNumber:
    """Author residue numbering: ``auth_seq_id`` and insertion code ('' when none)."""

    number: int
    icode: str = ""

    def __str__(self) -> str:
        return f"{self.number}{self.icode}"


@dataclass(frozen=True)
class ChainResidue:
    """One observed residue of a chain.

    Attributes
    ----------
    index : int
        1-based renumbered position in the chain.
    author : AuthorNumber
        Author numbering in the file.
    comp_id : str
        Chemical component as written in the file (``PSU``, ``G``, ``DA`` ...).
    parent : str
        One-letter parent nucleotide (A, C, G, U; T for DNA thymine; N when unknown).
    kind : str
        ``"RNA"``, ``"DNA"`` or ``"unknown"``.
    missing_base_atoms : tuple of str
        Ring atoms of the parent base (:data:`BASE_RING_ATOMS`) absent from the file: the base's pairs
        cannot be annotated (reported, never silently unpaired).
    """

    index: int
    author: AuthorNumber
    comp_id: str
    parent: str
    kind: str
    missing_base_atoms: tuple[str, ...] = ()

    @property
    def is_modified(self) -> bool:
        return self.comp_id not in _STANDARD


@dataclass(frozen=True)
class BackboneBreak:
    """A missing or over-long O3'(after)-P(after+1) link; ``distance`` is None when an atom is missing."""

    after: int
    distance: float | None


@dataclass(frozen=True)
class ExtractedChain:
    """A nucleic-acid polymer chain of the first model, renumbered from 1.

    ``exclusions`` is empty for a chain that may become a target (pair-based criteria aside).
    """

    chain: str
    residues: tuple[ChainResidue, ...]
    breaks: tuple[BackboneBreak, ...] = ()
    exclusions: tuple[str, ...] = ()

    @property
    def length(self) -> int:
        return len(self.residues)

    @property
    def sequence(self) -> str:
        return "".join(r.parent for r in self.residues)

    @property
    def author_numbers(self) -> tuple[AuthorNumber, ...]:
        return tuple(r.author for r in self.residues)

    @property
    def kind(self) -> str:
        # residues of unknown kind are reported separately; the chain's kind comes from the known ones
        kinds = {r.kind for r in self.residues} - {UNKNOWN}
        if kinds == {RNA}:
            return RNA
        if kinds == {DNA}:
            return DNA
        if kinds == {RNA, DNA}:
            return "hybrid"
        return UNKNOWN

    @property
    def modified(self) -> tuple[ChainResidue, ...]:
        return tuple(r for r in self.residues if r.is_modified)

    @property
    def incomplete_bases(self) -> tuple[ChainResidue, ...]:
        """Residues whose base lacks ring atoms (their pairs cannot be annotated)."""
        return tuple(r for r in self.residues if r.missing_base_atoms)

    @property
    def excluded(self) -> str | None:
        """All exclusion reasons joined with '; ', or None."""
        return "; ".join(self.exclusions) if self.exclusions else None

    def index_of(self, author: AuthorNumber) -> int | None:
        for r in self.residues:
            if r.author == author:
                return r.index
        return None


@dataclass(frozen=True)
class ExtractedEntry:
    """The result of :func:`extract`: the nucleic-acid chains and the parsed gemmi structure.

    ``structure`` (a ``gemmi.Structure`` with alternative conformations and hydrogens removed) is kept for
    the annotation adapter, which needs the coordinates of every model.
    """

    source: str
    model_count: int
    chains: tuple[ExtractedChain, ...]
    structure: gemmi.Structure = field(repr=False, compare=False)

    def chain(self, name: str) -> ExtractedChain:
        for c in self.chains:
            if c.chain == name:
                return c
        raise KeyError(name)


def read_text(path: str | Path) -> str:
    """Read a structure file as text, transparently gunzipping it (detected by the gzip magic bytes).

    Raises
    ------
    StructureFileError
        Unreadable file, or a corrupt/truncated gzip stream.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise StructureFileError(f"{path}: cannot read file: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gunzip_capped(path, MAX_STRUCTURE_BYTES)
        except TooLarge as exc:
            raise StructureFileError(str(exc)) from exc
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise StructureFileError(f"{path}: corrupt gzip data: {exc}") from exc
    return raw.decode("utf-8", errors="replace")


def _looks_like_mmcif(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return stripped.startswith("data_")
    return False


@dataclass(frozen=True)
class _Tables:
    """Parent information read from the file's own categories."""

    comp_parent: dict[str, str]  # comp_id -> parent comp_id
    comp_kind: dict[str, str]  # comp_id -> RNA/DNA from _chem_comp.type
    entity_can: dict[str, list[str]]  # entity id -> canonical one-letter tokens
    entity_kind: dict[str, str]  # entity id -> RNA/DNA/hybrid


_CAN_TOKEN = re.compile(r"\([^)]*\)|[A-Za-z]")


def _kind_from_type(text: str) -> str | None:
    upper = text.upper()
    if "HYBRID" in upper:
        return "hybrid"
    if "DEOXYRIBO" in upper or "DNA" in upper:
        return DNA
    if "RIBO" in upper or "RNA" in upper:
        return RNA
    return None


def _cif_tables(block: gemmi.cif.Block) -> _Tables:
    comp_parent: dict[str, str] = {}
    comp_kind: dict[str, str] = {}
    for row in block.find("_chem_comp.", ["id", "?type", "?mon_nstd_parent_comp_id"]):
        comp = gemmi.cif.as_string(row[0])
        if row.has(1):
            kind = _kind_from_type(gemmi.cif.as_string(row[1]))
            if kind in (RNA, DNA):
                comp_kind[comp] = kind
        if row.has(2) and not gemmi.cif.is_null(row[2]):
            # several parents ("A,G") cannot be reduced to one nucleotide: leave it to other sources
            parent = gemmi.cif.as_string(row[2]).strip()
            if parent and "," not in parent:
                comp_parent[comp] = parent
    for row in block.find("_pdbx_struct_mod_residue.", ["label_comp_id", "parent_comp_id"]):
        if not gemmi.cif.is_null(row[1]):
            comp_parent.setdefault(gemmi.cif.as_string(row[0]), gemmi.cif.as_string(row[1]).strip())
    entity_can: dict[str, list[str]] = {}
    entity_kind: dict[str, str] = {}
    for row in block.find("_entity_poly.", ["entity_id", "?type", "?pdbx_seq_one_letter_code_can"]):
        entity = gemmi.cif.as_string(row[0])
        if row.has(1):
            kind = _kind_from_type(gemmi.cif.as_string(row[1]))
            if kind:
                entity_kind[entity] = kind
        if row.has(2) and not gemmi.cif.is_null(row[2]):
            can = re.sub(r"\s+", "", gemmi.cif.as_string(row[2]))
            entity_can[entity] = _CAN_TOKEN.findall(can)
    return _Tables(comp_parent, comp_kind, entity_can, entity_kind)


def _pdb_tables(structure: gemmi.Structure) -> _Tables:
    comp_parent = {m.res_id.name: m.parent_comp_id for m in structure.mod_residues if m.parent_comp_id}
    entity_kind: dict[str, str] = {}
    for entity in structure.entities:
        if entity.polymer_type == gemmi.PolymerType.Rna:
            entity_kind[entity.name] = RNA
        elif entity.polymer_type == gemmi.PolymerType.Dna:
            entity_kind[entity.name] = DNA
        elif entity.polymer_type == gemmi.PolymerType.DnaRnaHybrid:
            entity_kind[entity.name] = "hybrid"
    return _Tables(comp_parent, {}, {}, entity_kind)


def load_structure(path: str | Path) -> tuple[gemmi.Structure, _Tables]:
    """Parse an mmCIF or PDB file (plain or gzipped) with gemmi; raises StructureFileError."""
    text = read_text(path)
    if not text.strip():
        raise StructureFileError(f"{path}: empty file")
    try:
        if _looks_like_mmcif(text):
            block = gemmi.cif.read_string(text).sole_block()
            tables = _cif_tables(block)
            structure = gemmi.make_structure_from_block(block)
        else:
            structure = gemmi.read_pdb_string(text)
            tables = None
    except (RuntimeError, ValueError, IndexError) as exc:
        raise StructureFileError(f"{path}: malformed structure file: {exc}") from exc
    if len(structure) == 0 or not any(len(chain) for chain in structure[0]):
        raise StructureFileError(f"{path}: no atoms found (not a PDB/mmCIF coordinate file?)")
    structure.setup_entities()
    structure.remove_alternative_conformations()
    structure.remove_hydrogens()
    if tables is None:
        tables = _pdb_tables(structure)
    return structure, tables


def _parent_of_comp(comp: str, tables: _Tables, depth: int = 0) -> tuple[str, str] | None:
    """Return (one-letter parent, kind) for a component from the file tables and gemmi's table."""
    if comp in _STANDARD:
        return _STANDARD[comp]
    parent = tables.comp_parent.get(comp)
    if parent and parent != comp and depth < 3:
        resolved = _parent_of_comp(parent, tables, depth + 1)
        if resolved:
            letter, kind = resolved
            return letter, tables.comp_kind.get(comp, kind)
    info = gemmi.find_tabulated_residue(comp)
    if info is not None and info.is_nucleic_acid():
        letter = info.one_letter_code.upper()
        kind = RNA if info.kind == gemmi.ResidueKind.RNA else DNA
        if letter in _NUCLEOTIDE_LETTERS:
            return letter, tables.comp_kind.get(comp, kind)
    return None


def _resolve(residue: gemmi.Residue, tables: _Tables) -> tuple[str, str]:
    comp = residue.name
    if comp in _STANDARD:
        return _STANDARD[comp]
    if comp in tables.comp_parent:
        resolved = _parent_of_comp(comp, tables)
        if resolved:
            return resolved
    kind = tables.comp_kind.get(comp)
    entity_kind = tables.entity_kind.get(residue.entity_id)
    if kind is None and entity_kind in (RNA, DNA):
        kind = entity_kind
    tokens = tables.entity_can.get(residue.entity_id)
    if tokens and residue.label_seq and 0 < residue.label_seq <= len(tokens):
        letter = tokens[residue.label_seq - 1].upper()
        if letter in _NUCLEOTIDE_LETTERS:
            if kind is None:
                info = gemmi.find_tabulated_residue(comp)
                if info is not None and info.kind in (gemmi.ResidueKind.RNA, gemmi.ResidueKind.DNA):
                    kind = RNA if info.kind == gemmi.ResidueKind.RNA else DNA
            return letter, kind or UNKNOWN
    resolved = _parent_of_comp(comp, tables)
    if resolved:
        return resolved
    return "N", kind or UNKNOWN


def _is_nucleic(residue: gemmi.Residue, tables: _Tables) -> bool:
    if residue.name in _STANDARD:
        return True
    if residue.name in tables.comp_kind or residue.name in tables.comp_parent:
        return True
    info = gemmi.find_tabulated_residue(residue.name)
    return info is not None and info.is_nucleic_acid()


def o3p_distance(first: gemmi.Residue, second: gemmi.Residue) -> float | None:
    """O3'(first)-P(second) distance in Å, or None when either atom is missing."""
    o3 = first.find_atom("O3'", "*")
    p = second.find_atom("P", "*")
    if o3 is None or p is None:
        return None
    return o3.pos.dist(p.pos)


def _polymer_residues(chain: gemmi.Chain) -> list[gemmi.Residue]:
    residues = []
    seen = set()
    for residue in chain.get_polymer():
        # microheterogeneity: two residues share a sequence position; keep the first like altlocs
        key = (residue.seqid.num, residue.seqid.icode)
        if key in seen:
            continue
        seen.add(key)
        residues.append(residue)
    return residues


def _extract_chain(chain: gemmi.Chain, tables: _Tables) -> ExtractedChain | None:
    polymer = _polymer_residues(chain)
    if not polymer or not any(_is_nucleic(r, tables) for r in polymer):
        return None
    residues = []
    for index, residue in enumerate(polymer, start=1):
        letter, kind = _resolve(residue, tables)
        icode = residue.seqid.icode.strip()
        author = AuthorNumber(residue.seqid.num, icode)
        present = {atom.name for atom in residue}
        missing = tuple(a for a in BASE_RING_ATOMS.get(letter, ()) if a not in present)
        residues.append(ChainResidue(index, author, residue.name, letter, kind, missing))
    breaks = []
    for index, (first, second) in enumerate(zip(polymer, polymer[1:], strict=False), start=1):
        distance = o3p_distance(first, second)
        if distance is None or distance > MAX_O3P_DISTANCE:
            breaks.append(BackboneBreak(index, distance))
    extracted = ExtractedChain(chain.name, tuple(residues), tuple(breaks))
    return ExtractedChain(chain.name, extracted.residues, extracted.breaks, _exclusions(extracted))


def _exclusions(chain: ExtractedChain) -> tuple[str, ...]:
    reasons = []
    kind = chain.kind
    if kind == DNA:
        reasons.append("DNA chain")
    elif kind == "hybrid":
        reasons.append("RNA-DNA hybrid chain")
    unmapped = [r for r in chain.residues if r.parent == "N" or r.kind == UNKNOWN]
    if unmapped:
        shown = ", ".join(f"{r.comp_id} {r.author}" for r in unmapped[:3])
        more = f" and {len(unmapped) - 3} more" if len(unmapped) > 3 else ""
        reasons.append(f"residue without a known parent nucleotide: {shown}{more}")
    if chain.length <= MIN_LENGTH_EXCLUSIVE:
        reasons.append(f"too short: {chain.length} nt (must be > {MIN_LENGTH_EXCLUSIVE})")
    if chain.breaks:
        first = chain.breaks[0]
        after = chain.residues[first.after - 1].author
        before = chain.residues[first.after].author
        what = "missing O3' or P atom" if first.distance is None else f"O3'-P {first.distance:.2f} Å"
        count = f"{len(chain.breaks)} backbone breaks" if len(chain.breaks) > 1 else "backbone break"
        reasons.append(f"{count}: first between {after} and {before} ({what})")
    return tuple(reasons)


def extract_from_structure(
    structure: gemmi.Structure, tables: _Tables, *, source: str = ""
) -> ExtractedEntry:
    """Extract the nucleic-acid chains of the first model of an already loaded structure."""
    chains = tuple(
        c for c in (_extract_chain(chain, tables) for chain in structure[0]) if c is not None
    )
    return ExtractedEntry(source=source, model_count=len(structure), chains=chains, structure=structure)


def extract(path: str | Path) -> ExtractedEntry:
    """Read ``path`` (mmCIF or PDB, plain or gzipped) and extract its nucleic-acid chains.

    Returns
    -------
    ExtractedEntry
        One :class:`ExtractedChain` per nucleic-acid polymer chain of model 1 (RNA, DNA, hybrids;
        protein and ligand chains are not listed), each with its exclusion reasons.

    Raises
    ------
    StructureFileError
        The file is missing, a corrupt gzip, or not a parseable coordinate file.
    """
    structure, tables = load_structure(path)
    return extract_from_structure(structure, tables, source=str(path))


def rna_chains(entry: ExtractedEntry) -> Iterable[ExtractedChain]:
    """The chains of ``entry`` without any exclusion reason."""
    return (c for c in entry.chains if not c.exclusions)
