"""Inputs of comparative methods: the (seed) and (20) sequence sets and their ``cmalign`` alignment.

SCIENCE.md §4, after CompaRNA (Puton et al., NAR 2013):

- **(seed)** = every sequence of the family's Rfam seed alignment (ungapped) plus the query, unless an
  identical sequence is already in the seed — then that seed entry *is* the query;
- **(20)** = the query plus 19 seed sequences whose identity to the query is within 65–95 %, drawn at random
  with a recorded seed (fewer than 19 candidates → no input).

Identity measure
----------------
``identity(a, b) = 1 - d(a, b) / max(|a|, |b|)``, where ``d`` is the edit (Levenshtein) distance between the
two ungapped sequences (upper case, T→U; substitutions, insertions and deletions all cost 1; only identical
letters match, so N matches nothing but N). It equals the fraction of identical positions for equal-length
ungapped sequences, penalises length differences like a global alignment does, and — unlike identity read
off one optimal alignment — does not depend on which of several co-optimal alignments a program happens to
return. It is computed as the score of a global alignment (Needleman–Wunsch) with Biopython's
``PairwiseAligner`` (match 0, mismatch −1, gap open/extend −1).

Alignment
---------
:func:`align_to_family` aligns an input with ``cmalign`` (Nawrocki & Eddy 2013) to the family's covariance
model and returns the Stockholm alignment with the model's ``SS_cons`` and the query's column mapping.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from comparna.rna.stockholm import (
    StockholmAlignment,
    read_stockholm,
    residue_columns,
    ungap,
    write_stockholm,
)
from ingest.rfam.library import RfamFamily, RfamLibrary, RfamLibraryError

__all__ = [
    "ComparativeInput",
    "FamilyAlignment",
    "align_to_family",
    "identity_candidates",
    "read_stockholm",
    "seed_input",
    "sequence_identity",
    "twenty_input",
    "write_stockholm",
]

SEED = "seed"
TWENTY = "20"
N_HOMOLOGUES = 19
MIN_IDENTITY = 0.65
MAX_IDENTITY = 0.95


@dataclass(frozen=True)
class ComparativeInput:
    """A stored, reproducible comparative input.

    Parameters
    ----------
    kind : {"seed", "20"}
    accession : str
        Family accession.
    rfam_version : str
        Library version the seed came from.
    query_name : str
        Name of the entry that is the query (a seed name when the query was already in the seed).
    sequences : tuple of (str, str)
        (name, ungapped sequence), query first.
    random_seed : int or None
        The seed of the random draw for (20); None for (seed).
    """

    kind: str
    accession: str
    rfam_version: str
    query_name: str
    sequences: tuple[tuple[str, str], ...]
    random_seed: int | None = None

    def to_fasta(self) -> str:
        return "".join(f">{name}\n{seq}\n" for name, seq in self.sequences)


@dataclass(frozen=True)
class FamilyAlignment:
    """A ``cmalign`` alignment of an input, with the model's consensus structure and the query row."""

    alignment: StockholmAlignment
    query_name: str
    accession: str
    rfam_version: str

    @property
    def query_row(self) -> str:
        return self.alignment.row(self.query_name)

    @property
    def query_columns(self) -> list[int]:
        """1-based column of each query residue (element k-1 for residue k)."""
        return residue_columns(self.query_row)

    def to_stockholm(self) -> str:
        return write_stockholm(self.alignment)


def normalise(sequence: str) -> str:
    """Upper case, T→U, gaps and whitespace removed."""
    return ungap("".join(sequence.split())).upper().replace("T", "U")


@lru_cache(maxsize=1)
def _edit_aligner():
    from Bio.Align import PairwiseAligner

    return PairwiseAligner(
        mode="global", match_score=0, mismatch_score=-1, open_gap_score=-1, extend_gap_score=-1
    )


def sequence_identity(a: str, b: str) -> float:
    """``1 - edit_distance(a, b) / max(|a|, |b|)`` on normalised sequences (see the module docstring)."""
    a, b = normalise(a), normalise(b)
    if not a or not b:
        raise ValueError("identity of an empty sequence")
    distance = -_edit_aligner().score(a, b)
    return 1.0 - distance / max(len(a), len(b))


def _residue_classes(sequence: str) -> str:
    return "".join(c if c in "ACGU" else "N" for c in normalise(sequence))


def _query_name(query_name: str, taken: set[str]) -> str:
    name, n = query_name, 1
    while name in taken:
        n += 1
        name = f"{query_name}_{n}"
    return name


def seed_input(
    query: str,
    seed: StockholmAlignment,
    *,
    accession: str,
    rfam_version: str,
    query_name: str = "query",
) -> ComparativeInput:
    """The (seed) input: all seed sequences plus the query unless an identical sequence is present."""
    q = normalise(query)
    members = [(name, normalise(row)) for name, row in zip(seed.names, seed.rows, strict=True)]
    present = next((name for name, s in members if s == q), None)
    if present is not None:
        chosen = present
        ordered = [(present, q)] + [m for m in members if m[0] != present]
    else:
        chosen = _query_name(query_name, set(seed.names))
        ordered = [(chosen, q)] + members
    return ComparativeInput(SEED, accession, rfam_version, chosen, tuple(ordered))


def identity_candidates(
    query: str,
    seed: StockholmAlignment,
    *,
    min_identity: float = MIN_IDENTITY,
    max_identity: float = MAX_IDENTITY,
) -> list[tuple[str, str, float]]:
    """Seed sequences with ``min_identity <= identity <= max_identity`` to the query, in seed order."""
    q = normalise(query)
    out = []
    for name, row in zip(seed.names, seed.rows, strict=True):
        s = normalise(row)
        ident = sequence_identity(q, s)
        if min_identity <= ident <= max_identity:
            out.append((name, s, ident))
    return out


def twenty_input(
    query: str,
    seed: StockholmAlignment,
    *,
    accession: str,
    rfam_version: str,
    random_seed: int,
    query_name: str = "query",
    n_homologues: int = N_HOMOLOGUES,
    min_identity: float = MIN_IDENTITY,
    max_identity: float = MAX_IDENTITY,
) -> ComparativeInput | None:
    """The (20) input: the query plus ``n_homologues`` random seed sequences in the identity window.

    The draw is ``random.Random(random_seed).sample`` over the candidates in seed order, so the same
    query, seed and ``random_seed`` give the same input. Returns None with fewer than ``n_homologues``
    candidates.
    """
    candidates = identity_candidates(query, seed, min_identity=min_identity, max_identity=max_identity)
    if len(candidates) < n_homologues:
        return None
    picked = random.Random(random_seed).sample(range(len(candidates)), n_homologues)
    members = [(candidates[k][0], candidates[k][1]) for k in sorted(picked)]
    name = _query_name(query_name, set(seed.names))
    return ComparativeInput(
        TWENTY, accession, rfam_version, name, ((name, normalise(query)), *members), random_seed
    )


def align_to_family(
    sequences: ComparativeInput | Sequence[tuple[str, str]],
    family: str | RfamFamily,
    library: RfamLibrary,
    *,
    query_name: str | None = None,
    cpu: int = 1,
    timeout: float | None = None,
) -> FamilyAlignment:
    """Align sequences to the family's covariance model with ``cmalign`` (default options, ``--cpu 1``).

    When the input holds the whole seed (a (seed) input), the seed alignment is passed with ``--mapali``
    and kept as curated; only the query is aligned. Otherwise every sequence is aligned to the model.

    Parameters
    ----------
    sequences : ComparativeInput or sequence of (name, sequence)
        Names must be unique and without whitespace.
    family : str or RfamFamily
        Accession or id.
    library : RfamLibrary
    query_name : str, optional
        The query's name; defaults to ``sequences.query_name`` for a ComparativeInput.

    Returns
    -------
    FamilyAlignment
        The Stockholm alignment (``#=GC SS_cons`` = the model's consensus structure) of every sequence.
    """
    if isinstance(sequences, ComparativeInput):
        query_name = query_name or sequences.query_name
        items = list(sequences.sequences)
    else:
        items = list(sequences)
    if query_name is None:
        raise ValueError("query_name is required")
    fam = family if isinstance(family, RfamFamily) else library.family(family)
    names = [n for n, _ in items]
    if len(set(names)) != len(names) or any(not n or any(c.isspace() for c in n) for n in names):
        raise ValueError("sequence names must be unique and without whitespace")
    if query_name not in names:
        raise ValueError(f"query {query_name!r} is not among the sequences")
    seed = library.read_seed(fam.accession) if fam.has_seed else None
    seed_names = set(seed.names) if seed is not None else set()
    # A (seed) input is aligned with --mapali: the curated seed alignment is kept as it is (the model was
    # built from it) and only the query is aligned to the model, which takes a fraction of a second where
    # realigning ~1000 tRNAs takes a minute.
    use_mapali = bool(seed_names) and seed_names <= set(names)
    to_align = [(n, s) for n, s in items if n not in seed_names] if use_mapali else items
    temp_query = None
    if use_mapali and not to_align:  # the query is a seed member: align a copy of it as the query row
        temp_query = _query_name("query", set(names))
        to_align = [(temp_query, dict(items)[query_name])]
    with tempfile.TemporaryDirectory(prefix="cmalign-") as tmp:
        cm = library.fetch_cm(fam.accession, Path(tmp) / "family.cm")
        fasta = Path(tmp) / "input.fa"
        fasta.write_text("".join(f">{n}\n{normalise(s)}\n" for n, s in to_align))
        out = Path(tmp) / "aligned.sto"
        argv = ["cmalign", "--cpu", str(cpu), "-o", str(out)]
        if use_mapali:
            mapali = Path(tmp) / "seed.sto"
            mapali.write_text(library.seed_text(fam.accession) or "", encoding="latin-1")
            argv += ["--mapali", str(mapali)]
        proc = subprocess.run(
            argv + [str(cm), str(fasta)], capture_output=True, text=True, timeout=timeout, check=False
        )
        if proc.returncode != 0:
            raise RfamLibraryError(f"cmalign failed ({proc.returncode}): {proc.stderr.strip()}")
        (alignment,) = read_stockholm(out.read_text(encoding="latin-1"))
    if temp_query is not None:
        named = [(n, r) for n, r in zip(alignment.names, alignment.rows, strict=True) if n != query_name]
        named = [(query_name if n == temp_query else n, r) for n, r in named]
        named.sort(key=lambda nr: nr[0] != query_name)
        alignment = StockholmAlignment(
            tuple(n for n, _ in named), tuple(r for _, r in named), dict(alignment.gf), dict(alignment.gc)
        )
    expected = {n: _residue_classes(s) for n, s in items}
    if set(alignment.names) != set(expected):
        raise RfamLibraryError("cmalign output does not hold exactly the input sequences")
    for name in alignment.names:
        # Every residue must survive the alignment (cmalign writes inserts in lower case and symbols
        # outside the RNA alphabet, like X in some seeds, as N).
        if _residue_classes(alignment.ungapped(name)) != expected[name]:
            raise RfamLibraryError(f"cmalign changed the residues of {name!r}")
    return FamilyAlignment(alignment, query_name, fam.accession, library.version)
