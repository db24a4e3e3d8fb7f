"""Base-pair annotation from 3D coordinates: an adapter around RNApolis' annotator (SCIENCE.md §1, §3).

RNApolis (Zok et al., Bioinformatics 2018; PyPI ``rnapolis``) classifies base-base pairs by the
Leontis-Westhof scheme (Leontis & Westhof, RNA 2001): cis/trans and the interacting edges (Watson-Crick,
Hoogsteen, Sugar). The adapter

* feeds RNApolis residues built from gemmi's parse (see :mod:`ingest.pdb.extract`), one model at a time,
  with each residue's one-letter name set to its parent nucleotide, so modified residues are judged by
  their parent; this also bypasses two limits of ``rnapolis.parser.read_3d_structure``: it merges atoms of
  all models into one (its duplicate filter ignores the model number) and it reads only uncompressed files;
* keeps, for several models (NMR ensembles), only the pairs present with the same class in every model;
* orders every pair as (i, j) with i before j in chain/sequence order, reversing the class with it
  (``cHW`` seen from the other base is ``cWH``), so both orientations collapse into one pair;
* gives per chain the **standard** set (cWW A-U, G-C, G-U by parent nucleotide) and the **extended** set
  (every base-base pair, standard ones included; multiplets allowed), renumbered 1..L;
* adds the pair-based exclusions: a chain whose standard pairs are all with other strands ("pairs only
  with other strands"), RNA paired with DNA, and a chain without any standard pair (not valid for
  benchmarking);
* keeps the pairs a chain makes with other strands apart (:data:`SINGLE_CHAIN_RULE`), with both chains
  named, and lists the residues whose bases lack ring atoms (their pairs cannot be annotated).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import gemmi

from comparna.rna.structure import Structure
from ingest.pdb.extract import (
    BASE_RING_ATOMS,
    DNA,
    RNA,
    AuthorNumber,
    ExtractedChain,
    ExtractedEntry,
    extract,
)

#: Canonical base combinations of the standard pair set (order-free).
STANDARD_COMBINATIONS = frozenset({frozenset("AU"), frozenset("GC"), frozenset("GU")})

#: The twelve geometric families of Leontis & Westhof as RNApolis names them (cis/trans + two edges).
LW_CLASSES = frozenset(f"{ct}{e1}{e2}" for ct in "ct" for e1 in "WHS" for e2 in "WHS")

REASON_OTHER_STRANDS = "pairs only with other strands"
REASON_DNA_PARTNER = "paired with DNA"
REASON_NO_STANDARD_PAIR = "no standard base pair"

#: What a single-chain target keeps (shown in ``annotate --json``, the docs and on target pages).
SINGLE_CHAIN_RULE = (
    "A target is one chain. Its reference structure holds only the pairs between two residues of that "
    "chain (standard: cWW A-U, G-C, G-U; extended: every base-base pair), because a single-sequence "
    "prediction can only pair the chain with itself. Pairs with other strands are recorded with the "
    "target (partner chain and residue, Leontis-Westhof class) but are not part of the reference: their "
    "residues count as unpaired in scoring. A chain whose standard pairs are all with other strands, or "
    "that pairs with DNA, is not a target."
)


@dataclass(frozen=True, order=True)
class ResidueId:
    """A residue across models: chain name and author number."""

    chain: str
    author: AuthorNumber

    def __str__(self) -> str:
        return f"{self.chain}.{self.author}"


@dataclass(frozen=True)
class PairCall:
    """One base-base pair between two residues, ``first`` before ``second`` in chain/sequence order."""

    first: ResidueId
    second: ResidueId
    lw: str


@dataclass(frozen=True)
class EntryPairs:
    """Structure-level annotation: every base-base pair between nucleic-acid residues of the entry.

    ``pairs`` holds the pairs present in all ``models``; ``per_model`` the count found in each model.
    """

    pairs: tuple[PairCall, ...]
    models: tuple[int, ...]
    per_model: tuple[int, ...]


@dataclass(frozen=True)
class InterChainPair:
    """A pair between residue ``i`` of this chain and a residue of another chain (class from this side)."""

    chain: str
    i: int
    author: AuthorNumber
    partner_chain: str
    partner_i: int | None  # renumbered position in the partner chain (None: partner not a polymer chain)
    partner_author: AuthorNumber
    partner_parent: str
    partner_kind: str
    lw: str
    standard: bool

    def to_json(self) -> dict:
        return {
            "chain": self.chain, "i": self.i, "author": str(self.author),
            "partner_chain": self.partner_chain, "partner_i": self.partner_i,
            "partner_author": str(self.partner_author), "partner_parent": self.partner_parent,
            "partner_kind": self.partner_kind, "lw": self.lw, "standard": self.standard,
        }


@dataclass(frozen=True)
class AnnotatedChain:
    """The reference secondary structure of one chain, 1-based on the renumbered sequence.

    ``standard_pairs`` and ``extended_pairs`` are ``(i, j, lw)`` with i < j; ``inter_chain_pairs`` are the
    chain's extended pairs with residues of other chains as ``(i, other_chain, other_author, lw)`` with
    the class read from this chain's side (:data:`SINGLE_CHAIN_RULE`); ``inter_chain_details`` adds the
    partner's renumbered position and parent base and whether the pair is standard.
    ``incomplete_bases`` lists ``(i, author, comp_id, parent, missing ring atoms, models)`` of residues
    whose pairs cannot be annotated (in the listed 1-based models).
    """

    chain: str
    sequence: str
    author_numbers: tuple[AuthorNumber, ...]
    standard_pairs: tuple[tuple[int, int, str], ...]
    extended_pairs: tuple[tuple[int, int, str], ...]
    inter_chain_pairs: tuple[tuple[int, str, AuthorNumber, str], ...]
    exclusions: tuple[str, ...]
    modified: tuple[tuple[int, str], ...] = ()
    inter_chain_details: tuple[InterChainPair, ...] = ()
    incomplete_bases: tuple[tuple[int, AuthorNumber, str, str, tuple[str, ...], tuple[int, ...]], ...] = ()

    @property
    def length(self) -> int:
        return len(self.sequence)

    @property
    def excluded(self) -> str | None:
        return "; ".join(self.exclusions) if self.exclusions else None

    def standard_structure(self) -> Structure:
        return Structure.from_pairs(self.length, [(i, j) for i, j, _ in self.standard_pairs])

    def extended_structure(self) -> Structure:
        return Structure.from_pairs(self.length, [(i, j) for i, j, _ in self.extended_pairs])

    def inter_chain_json(self) -> list[dict]:
        """This chain's pairs with other strands, both chains named (JSON, also stored with targets)."""
        return [p.to_json() for p in self.inter_chain_details]

    def incomplete_json(self) -> list[dict]:
        """Residues whose base lacks ring atoms (JSON, also stored with targets)."""
        return [
            {"i": i, "author": str(author), "comp_id": comp, "parent": parent, "missing_atoms": list(missing),
             "models": list(models)}
            for i, author, comp, parent, missing, models in self.incomplete_bases
        ]

    def to_json(self) -> dict:
        """The JSON shape of ``manage.py annotate --json`` for one chain."""
        return {
            "chain": self.chain,
            "sequence": self.sequence,
            "author_numbers": [str(a) for a in self.author_numbers],
            "standard_pairs": [list(p) for p in self.standard_pairs],
            "extended_pairs": [list(p) for p in self.extended_pairs],
            "inter_chain_pairs": self.inter_chain_json(),
            "incomplete_bases": self.incomplete_json(),
            "excluded": self.excluded,
        }


@dataclass(frozen=True)
class AnnotatedEntry:
    source: str
    model_count: int
    chains: tuple[AnnotatedChain, ...]
    pairs: EntryPairs

    def chain(self, name: str) -> AnnotatedChain:
        for c in self.chains:
            if c.chain == name:
                return c
        raise KeyError(name)

    def inter_chain_pairs(self) -> list[dict]:
        """Every pair between two chains once, as ``{"chain1", "i1", "author1", "chain2", "i2", ...}``."""
        out = []
        for c in self.chains:
            for p in c.inter_chain_details:
                if (p.chain, p.i) < (p.partner_chain, p.partner_i if p.partner_i is not None else -1):
                    out.append({
                        "chain1": p.chain, "i1": p.i, "author1": str(p.author),
                        "chain2": p.partner_chain, "i2": p.partner_i, "author2": str(p.partner_author),
                        "lw": p.lw, "standard": p.standard,
                    })
        return out

    def to_json(self) -> dict:
        return {
            "chains": [c.to_json() for c in self.chains],
            "inter_chain_pairs": self.inter_chain_pairs(),
            "single_chain_rule": SINGLE_CHAIN_RULE,
        }


_DSSR_EDGES = {"W": "W", "H": "H", "S": "S", "M": "H", "m": "S"}


def normalize_lw(text: str) -> str | None:
    """Normalise a Leontis-Westhof class to RNApolis' three-letter form (``cWW``, ``tHS`` ...).

    Accepts RNApolis/RNAView/FR3D ``cWW``, ``tSh``, ``CWW``, DSSR ``cW-W``/``tM-m`` (M = major groove =
    Hoogsteen, m = minor groove = Sugar). FR3D lowercase variants (``cWw``, ``csS``) keep
    their family. Returns None for anything that is not a definite base-pair family: FR3D near pairs
    (``ncWW``), unclassified edges (DSSR ``c.W``, ``--``), stacking (``s35``) and other interactions.

    Examples
    --------
    >>> normalize_lw("cW-W"), normalize_lw("tM-m"), normalize_lw("tSh"), normalize_lw("ncWW")
    ('cWW', 'tHS', 'tSH', None)
    """
    token = text.strip().replace("-", "")
    if len(token) != 3 or token[0].lower() not in "ct":
        return None
    edges = []
    for ch in token[1:]:
        if ch in ("M", "m"):
            edges.append(_DSSR_EDGES[ch])
        elif ch.upper() in "WHS":
            edges.append(ch.upper())
        else:
            return None
    return f"{token[0].lower()}{edges[0]}{edges[1]}"


def reverse_lw(lw: str) -> str:
    """The same pair seen from the other base: ``cWH`` -> ``cHW``."""
    return f"{lw[0]}{lw[2]}{lw[1]}"


def is_standard(lw: str, base1: str, base2: str) -> bool:
    """True for a cWW pair between A-U, G-C or G-U (parent nucleotides; SCIENCE.md §1)."""
    return lw == "cWW" and frozenset((base1.upper(), base2.upper())) in STANDARD_COMBINATIONS


def _rnapolis():
    # imported lazily: rnapolis.annotator calls logging.basicConfig() at import time and pulls in pandas
    from rnapolis import annotator, tertiary
    from rnapolis.common import ResidueAuth, ResidueLabel

    return annotator, tertiary, ResidueAuth, ResidueLabel


def _model_residues(model: gemmi.Model, model_number: int, entry: ExtractedEntry, order: dict):
    """RNApolis residues of one model for the residues extracted from model 1."""
    _, tertiary, ResidueAuth, ResidueLabel = _rnapolis()
    wanted = {(c.chain, r.author): r for c in entry.chains for r in c.residues}
    residues = []
    for chain in model:
        for residue in chain:
            icode = residue.seqid.icode.strip()
            extracted = wanted.get((chain.name, AuthorNumber(residue.seqid.num, icode)))
            if extracted is None:
                continue
            label = None
            if residue.label_seq is not None:
                label = ResidueLabel(residue.subchain or chain.name, residue.label_seq, residue.name)
            auth = ResidueAuth(chain.name, residue.seqid.num, icode or None, residue.name)
            atoms = tuple(
                tertiary.Atom(residue.entity_id or None, label, auth, model_number, atom.name,
                              atom.pos.x, atom.pos.y, atom.pos.z, atom.occ)
                for atom in residue
            )
            if not atoms:
                continue
            residues.append(tertiary.Residue3D(label, auth, model_number, extracted.parent, atoms))
    residues.sort(key=lambda r: order[_residue_id(r)])
    return tertiary.Structure3D(residues)


def _residue_id(residue) -> ResidueId:
    return ResidueId(residue.auth.chain, AuthorNumber(residue.auth.number, residue.auth.icode or ""))


def _calls(structure3d, model_number: int, order: dict) -> set[PairCall]:
    annotator, _, _, _ = _rnapolis()
    base_pairs, _, _ = annotator.find_pairs(structure3d, model_number)
    calls = set()
    for pair in base_pairs:
        lw = pair.lw.value
        a, b = _residue_id(pair.nt1), _residue_id(pair.nt2)
        if order[a] > order[b]:
            a, b, lw = b, a, reverse_lw(lw)
        calls.add(PairCall(a, b, lw))
    return calls


def annotate_pairs(entry: ExtractedEntry, *, models: Sequence[int] | None = None) -> EntryPairs:
    """Annotate every base-base pair between the extracted nucleic-acid residues of ``entry``.

    Parameters
    ----------
    entry : ExtractedEntry
        From :func:`ingest.pdb.extract.extract`; all its chains (excluded ones too) take part, so pairs
        with other strands and with DNA are seen.
    models : sequence of int, optional
        0-based model indices to use (default: all). Only pairs found, with the same class, in every
        one of them are returned.
    """
    order = {}
    for chain_pos, chain in enumerate(entry.chains):
        for r in chain.residues:
            order[ResidueId(chain.chain, r.author)] = (chain_pos, r.index)
    indices = list(range(len(entry.structure))) if models is None else list(models)
    consensus: set[PairCall] | None = None
    counts = []
    for index in indices:
        model = entry.structure[index]
        model_number = index + 1
        calls = _calls(_model_residues(model, model_number, entry, order), model_number, order)
        counts.append(len(calls))
        consensus = calls if consensus is None else consensus & calls
    pairs = tuple(sorted(consensus or (), key=lambda p: (order[p.first], order[p.second], p.lw)))
    return EntryPairs(pairs=pairs, models=tuple(indices), per_model=tuple(counts))


def incomplete_bases(entry: ExtractedEntry, models: Sequence[int] | None = None) -> dict:
    """Residues whose base lacks ring atoms in some model: ResidueId -> (missing atoms, 1-based models).

    Model 1 comes from extraction (:attr:`ChainResidue.missing_base_atoms`); the other models are read
    here, since a pair is kept only when found in every model.
    """
    indices = list(range(len(entry.structure))) if models is None else list(models)
    wanted = {(c.chain, r.author): r for c in entry.chains for r in c.residues}
    found: dict[ResidueId, tuple[set, list]] = {}
    for index in indices:
        for chain in entry.structure[index]:
            for residue in chain:
                r = wanted.get((chain.name, AuthorNumber(residue.seqid.num, residue.seqid.icode.strip())))
                if r is None:
                    continue
                present = {atom.name for atom in residue}
                missing = [a for a in BASE_RING_ATOMS.get(r.parent, ()) if a not in present]
                if missing:
                    atoms, where = found.setdefault(ResidueId(chain.name, r.author), (set(), []))
                    atoms.update(missing)
                    where.append(index + 1)
    return found


def _annotate_chain(
    chain: ExtractedChain, pairs: Iterable[PairCall], kinds: dict, incomplete_all: dict | None = None
) -> AnnotatedChain:
    index_of = {r.author: r.index for r in chain.residues}
    parent = {r.index: r.parent for r in chain.residues}
    standard, extended, inter, details = [], [], [], []
    if incomplete_all is None:  # model 1 only
        incomplete_all = {
            ResidueId(chain.chain, r.author): (set(r.missing_base_atoms), [1]) for r in chain.incomplete_bases
        }
    incomplete_keys = {(k.chain, k.author) for k in incomplete_all}
    standard_inter = 0
    dna_partner = False
    for p in pairs:
        mine_first = p.first.chain == chain.chain
        mine_second = p.second.chain == chain.chain
        if mine_first and mine_second:
            i, j = index_of[p.first.author], index_of[p.second.author]
            extended.append((i, j, p.lw))
            if is_standard(p.lw, parent[i], parent[j]):
                standard.append((i, j, p.lw))
        elif mine_first or mine_second:
            me, other, lw = (p.first, p.second, p.lw) if mine_first else (p.second, p.first, reverse_lw(p.lw))
            i = index_of[me.author]
            inter.append((i, other.chain, other.author, lw))
            other_parent, other_kind, other_index = kinds[other]
            standard_pair = is_standard(lw, parent[i], other_parent)
            details.append(InterChainPair(chain.chain, i, me.author, other.chain, other_index, other.author,
                                          other_parent, other_kind, lw, standard_pair))
            if standard_pair:
                standard_inter += 1
                if other_kind == DNA:
                    dna_partner = True
    exclusions = list(chain.exclusions)
    if chain.kind == RNA:
        if dna_partner:
            exclusions.append(REASON_DNA_PARTNER)
        incomplete = [r for r in chain.residues if (chain.chain, r.author) in incomplete_keys]
        if not standard and standard_inter:
            exclusions.append(REASON_OTHER_STRANDS)
        elif not standard and incomplete:
            # say why: the bases could not be judged, not that they do not pair
            first = incomplete[0]
            atoms = " ".join(sorted(incomplete_all[ResidueId(chain.chain, first.author)][0]))
            exclusions.append(
                f"{REASON_NO_STANDARD_PAIR} ({len(incomplete)} of {chain.length} bases lack ring atoms, e.g. "
                f"{first.comp_id} {first.author} without {atoms}: their pairs cannot be annotated)"
            )
        elif not standard:
            exclusions.append(REASON_NO_STANDARD_PAIR)
    return AnnotatedChain(
        chain=chain.chain,
        sequence=chain.sequence,
        author_numbers=chain.author_numbers,
        standard_pairs=tuple(standard),
        extended_pairs=tuple(extended),
        inter_chain_pairs=tuple(inter),
        exclusions=tuple(exclusions),
        modified=tuple((r.index, r.comp_id) for r in chain.modified),
        inter_chain_details=tuple(details),
        incomplete_bases=tuple(_incomplete_rows(chain, incomplete_all)),
    )


def _incomplete_rows(chain: ExtractedChain, incomplete_all: dict):
    for r in chain.residues:
        found = incomplete_all.get(ResidueId(chain.chain, r.author))
        if found is not None:
            atoms, models = found
            ordered = tuple(a for a in BASE_RING_ATOMS[r.parent] if a in atoms)
            yield (r.index, r.author, r.comp_id, r.parent, ordered, tuple(models))


def annotate_entry(entry: ExtractedEntry, *, models: Sequence[int] | None = None) -> AnnotatedEntry:
    """Annotate ``entry`` and split the pairs into per-chain standard/extended structures."""
    pairs = annotate_pairs(entry, models=models)
    kinds = {
        ResidueId(c.chain, r.author): (r.parent, r.kind, r.index) for c in entry.chains for r in c.residues
    }
    missing = incomplete_bases(entry, models)
    chains = tuple(_annotate_chain(c, pairs.pairs, kinds, missing) for c in entry.chains)
    return AnnotatedEntry(source=entry.source, model_count=entry.model_count, chains=chains, pairs=pairs)


def annotate_file(path: str | Path, *, models: Sequence[int] | None = None) -> AnnotatedEntry:
    """Extract and annotate a structure file (mmCIF or PDB, plain or gzipped).

    Raises
    ------
    ingest.pdb.extract.StructureFileError
        The file cannot be read or parsed.
    """
    return annotate_entry(extract(path), models=models)
