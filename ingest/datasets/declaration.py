"""A dataset as a declaration: where its file is, how to read it, which entries are kept, which subsets.

:class:`DatasetDeclaration` is data (like a predictor spec): the source file (shipped under ``data/`` with
its sha256), the format reader and its options (:mod:`ingest.datasets.readers`), the filters, the subset
rules, provenance, citation and licence. :func:`prepare_dataset` applies it; the import service stores
the result. A new benchmark set is a declaration plus tests.

Filters, each entry excluded by the first one it fails (SCIENCE.md §3, the RNA STRAND rules):

1. ``malformed``  -- the entry cannot be read (the reader's message);
2. ``too_short``  -- fewer than ``min_length`` nt;
3. ``non_acgu``   -- after upper-casing and T->U, a symbol other than A, C, G, U;
4. ``multi_molecule`` -- the source says the entry is several molecules written as one sequence (an RNA
   STRAND header's "number of molecules: N", N > 1: e.g. PDB_00447, four copies of 1HVU's 30-nt
   pseudoknot, one after the other). The chains cannot be recovered from the file (no chain breaks), so
   the entry is left out rather than scored as one RNA;
5. ``redundant``  -- CD-HIT-EST, >= ``identity`` global identity and >= ``coverage_longer`` coverage of
   the longer sequence, against the entry kept for its cluster (the longest; ties: smallest id).

Subsets: ``all``; one per declared length bin; ``pk`` (at least two crossing pairs) and ``pk-<bin>``; and,
when ``family_subsets`` is set, ``family-<slug>`` for each declared family (:mod:`comparna.rna.families`).

Pure module: standard library, comparna.rna and the readers.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from comparna.rna.families import by_label, canonical_family
from comparna.rna.redundancy import remove_redundant
from ingest.datasets.readers import EntryError, RawEntry, read_source
from ingest.strand.reader import count_entries

__all__ = [
    "DatasetDeclaration",
    "ExcludedEntry",
    "KeptEntry",
    "LengthBin",
    "Preparation",
    "SubsetSpec",
    "file_sha256",
    "normalise_sequence",
    "prepare_dataset",
]

_ACGU = frozenset("ACGU")


@dataclass(frozen=True)
class LengthBin:
    """A length subset: ``low`` to ``high`` nt (``high`` None: no upper end)."""

    slug: str
    name: str
    low: int
    high: int | None
    description: str
    pk_description: str

    def holds(self, length: int) -> bool:
        return length >= self.low and (self.high is None or length <= self.high)


@dataclass(frozen=True)
class SubsetSpec:
    """One subset a declaration creates (slug, name and description as stored)."""

    slug: str
    name: str
    description: str


@dataclass(frozen=True)
class DatasetDeclaration:
    """Everything the generic importer needs to know about one benchmark set.

    Parameters
    ----------
    name : str
        Slug of the dataset (``import_dataset NAME``; also the ImportRun kind).
    title, short_title : str
        Shown to users ("RNA STRAND v2.0" / "RNA STRAND").
    description : str
        Stored on the dataset: the rules in one paragraph.
    source : str
        The source file, relative to the project's ``data/`` folder.
    sha256 : str
        Checksum of that file; a default import refuses a file that differs.
    fmt, options : str, mapping
        Reader (key of :data:`ingest.datasets.readers.READERS`) and its keyword options.
    citation, url, licence, provenance : str
        Where the data come from and under which terms (shown on the dataset page, stored with the data).
    min_length, identity, coverage_longer : int, float, float
        The filters (module docstring).
    length_bins : tuple of LengthBin
    family_subsets : bool
        Create a subset per family of :attr:`families`.
    families : tuple of str
        Canonical family labels the dataset declares (its classes); with ``family_subsets``, one subset
        each, in this order.
    definitions : tuple of str
        Pair definitions the dataset is scored on.
    """

    name: str
    title: str
    short_title: str
    description: str
    source: str
    sha256: str
    fmt: str
    options: Mapping[str, Any] = field(default_factory=dict)
    citation: str = ""
    url: str = ""
    licence: str = ""
    provenance: str = ""
    min_length: int = 20
    identity: float = 0.9
    coverage_longer: float = 0.7
    length_bins: tuple[LengthBin, ...] = ()
    family_subsets: bool = False
    families: tuple[str, ...] = ()
    definitions: tuple[str, ...] = ("extended",)

    def __post_init__(self) -> None:
        unknown = [f for f in self.families if by_label(f) is None]
        if unknown:
            raise ValueError(f"dataset {self.name}: families {unknown} are not canonical family labels")

    @property
    def reasons(self) -> dict[str, str]:
        """Exclusion reason code -> text."""
        return {
            "malformed": "malformed entry",
            "too_short": f"shorter than {self.min_length} nt",
            "non_acgu": "non-ACGU symbols",
            "multi_molecule": "several molecules written as one sequence",
            "redundant": f"redundant (CD-HIT-EST {self.identity:.0%} identity, {self.coverage_longer:.0%} "
            "coverage of the longer)".replace("%", " %"),
        }

    def subsets(self) -> list[SubsetSpec]:
        """Every subset this declaration creates, in page order."""
        out = [SubsetSpec("all", "All RNAs", f"Every {self.short_title} entry that passed the filters.")]
        out += [SubsetSpec(b.slug, b.name, b.description) for b in self.length_bins]
        out.append(SubsetSpec("pk", "Pseudoknotted", "The reference has at least two crossing pairs."))
        out += [
            SubsetSpec(f"pk-{b.slug}", f"Pseudoknotted, {b.slug}", b.pk_description) for b in self.length_bins
        ]
        if self.family_subsets:
            for label in self.families:
                family = by_label(label)
                assert family is not None
                description = f"{self.short_title}'s {label} family."
                out.append(SubsetSpec(f"family-{family.slug}", label, description))
        return out

    def subsets_of(self, length: int, is_pseudoknotted: bool, family: str) -> list[str]:
        """Subset slugs of a kept entry."""
        if length < self.min_length:
            raise ValueError(f"length {length} is below the {self.short_title} minimum of {self.min_length}")
        bins = [b.slug for b in self.length_bins if b.holds(length)]
        out = ["all", *bins]
        if is_pseudoknotted:
            out += ["pk", *(f"pk-{b}" for b in bins)]
        if self.family_subsets and family in self.families:
            family_obj = by_label(family)
            assert family_obj is not None
            out.append(f"family-{family_obj.slug}")
        return out

    def family_of(self, entry: RawEntry) -> str:
        """The canonical family of an entry from the dataset's own class ("" when it names none)."""
        return canonical_family(entry.rna_class)


def normalise_sequence(sequence: str) -> str:
    """Upper-case and T -> U (SCIENCE.md §3)."""
    return sequence.upper().replace("T", "U")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, or of a directory's files (name and content, sorted by name)."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        for f in sorted(x for x in p.iterdir() if x.is_file()):
            h.update(f.name.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
        return h.hexdigest()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class ExcludedEntry:
    """An entry left out, with a reason code (keys of ``reasons``) and a human-readable detail."""

    entry_id: str
    reason: str
    detail: str
    representative: str | None = None  # for reason "redundant": the entry kept instead
    sequence: str = ""  # normalised, when the entry was readable
    family: str = ""


@dataclass(frozen=True)
class KeptEntry:
    """An entry in the benchmark: the entry as read, its normalised sequence, family and subsets."""

    entry: RawEntry
    sequence: str
    subsets: tuple[str, ...]
    family: str = ""
    redundant_members: tuple[str, ...] = ()  # entries removed as redundant of this one

    @property
    def entry_id(self) -> str:
        return self.entry.entry_id


@dataclass(frozen=True)
class Preparation:
    """Result of :func:`prepare_dataset`.

    Attributes
    ----------
    kept, excluded : tuple
        Sorted by entry id.
    steps : tuple of (str, int)
        Entries remaining after each step: ``read``, ``parsed``, ``length>=N``, ``ACGU only``,
        ``one molecule``, ``non-redundant``.
    subset_counts : Mapping[str, int]
        Kept entries per subset slug.
    family_counts : Mapping[str, dict[str, int]]
        Per family ("" = none): entries read, kept.
    cdhit_command, cdhit_version : provenance of the redundancy step.
    """

    kept: tuple[KeptEntry, ...]
    excluded: tuple[ExcludedEntry, ...]
    steps: tuple[tuple[str, int], ...]
    subset_counts: Mapping[str, int] = field(default_factory=dict)
    family_counts: Mapping[str, dict[str, int]] = field(default_factory=dict)
    cdhit_command: tuple[str, ...] = ()
    cdhit_version: str = ""

    @property
    def redundant_of(self) -> dict[str, str]:
        """Removed entry id -> representative kept."""
        return {e.entry_id: e.representative for e in self.excluded if e.representative is not None}

    def exclusion_counts(self) -> dict[str, int]:
        """Reason code -> number of entries excluded for it."""
        return dict(Counter(e.reason for e in self.excluded))


def screen_entry(
    decl: DatasetDeclaration, item: RawEntry | EntryError
) -> tuple[str | None, ExcludedEntry | None]:
    """Apply the non-redundancy filters to one entry: (normalised sequence, None) or (None, exclusion)."""
    if isinstance(item, EntryError):
        return None, ExcludedEntry(item.entry_id, "malformed", item.message)
    seq = normalise_sequence(item.sequence)
    family = decl.family_of(item)
    if item.length < decl.min_length:
        detail = f"{item.length} nt"
        return None, ExcludedEntry(item.entry_id, "too_short", detail, sequence=seq, family=family)
    bad = sorted(set(seq) - _ACGU)
    if bad:
        detail = "symbols " + " ".join(repr(c) for c in bad)
        return None, ExcludedEntry(item.entry_id, "non_acgu", detail, sequence=seq, family=family)
    molecules = molecules_of(item)
    if molecules > 1:
        detail = f"{molecules} molecules concatenated ({item.length} nt in all)"
        return None, ExcludedEntry(item.entry_id, "multi_molecule", detail, sequence=seq, family=family)
    return seq, None


def molecules_of(entry: RawEntry) -> int:
    """How many molecules the source says the entry holds (1 when it does not say)."""
    value = entry.provenance.get("molecules") if entry.provenance else None
    return value if isinstance(value, int) and value > 0 else 1


def prepare_dataset(
    decl: DatasetDeclaration,
    path: str | os.PathLike[str],
    *,
    progress: Callable[[int, int], None] | None = None,
    cdhit_path: str = "cd-hit-est",
    threads: int | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> Preparation:
    """Read, filter and de-duplicate a declared dataset; return the benchmark entries and every exclusion.

    Parameters
    ----------
    decl : DatasetDeclaration
    path : path
        The source (the declared file or another file of the same format).
    progress : callable, optional
        ``progress(done, total)`` while reading (total = entries read so far plus an estimate when the
        format gives none) and once more when the redundancy step is finished (``done == total``).
    cdhit_path, threads, workdir
        Passed to :func:`comparna.rna.redundancy.remove_redundant`.

    Raises
    ------
    ingest.datasets.readers.SourceError, comparna.bounded.TooLarge
        When the source cannot be read at all.
    comparna.rna.redundancy.CdHitError
        When cd-hit-est is missing or fails.
    """
    total = _count(decl, Path(path)) if progress is not None else 0
    candidates: dict[str, tuple[RawEntry, str]] = {}
    excluded: list[ExcludedEntry] = []
    families_read: Counter[str] = Counter()
    read = parsed = long_enough = acgu = 0
    for done, item in enumerate(read_source(path, decl.fmt, decl.options), start=1):
        read += 1
        seq, why = screen_entry(decl, item)
        if isinstance(item, RawEntry):
            families_read[decl.family_of(item)] += 1
        if why is None or why.reason != "malformed":
            parsed += 1
        if why is None or why.reason not in ("malformed", "too_short"):
            long_enough += 1
        if why is None or why.reason == "multi_molecule":
            acgu += 1
        if why is not None:
            excluded.append(why)
        else:
            assert isinstance(item, RawEntry) and seq is not None
            if item.entry_id in candidates:
                excluded.append(ExcludedEntry(item.entry_id, "malformed", "duplicate entry id in the input"))
            else:
                candidates[item.entry_id] = (item, seq)
        if progress is not None:
            progress(done, max(total, done))

    clusters = remove_redundant(
        {k: s for k, (_, s) in candidates.items()},
        identity=decl.identity,
        coverage_longer=decl.coverage_longer,
        cdhit_path=cdhit_path,
        threads=threads,
        workdir=workdir,
    )
    members: dict[str, list[str]] = clusters.clusters()
    for member, rep in clusters.member_of.items():
        pc = clusters.identity.get(member)
        entry, seq = candidates[member]
        excluded.append(
            ExcludedEntry(member, "redundant", f"{pc:.2f} % identical to {rep}", representative=rep,
                          sequence=seq, family=decl.family_of(entry))
        )

    kept = []
    subset_counts: Counter[str] = Counter()
    families_kept: Counter[str] = Counter()
    for rep in sorted(clusters.representatives):
        entry, seq = candidates[rep]
        family = decl.family_of(entry)
        subsets = tuple(decl.subsets_of(entry.length, entry.structure.is_pseudoknotted, family))
        subset_counts.update(subsets)
        families_kept[family] += 1
        kept.append(KeptEntry(entry, seq, subsets, family, tuple(members[rep])))
    if progress is not None:
        progress(max(total, read), max(total, read))
    steps = (
        ("read", read),
        ("parsed", parsed),
        (f"length>={decl.min_length}", long_enough),
        ("ACGU only", acgu),
        ("one molecule", len(candidates)),
        ("non-redundant", len(kept)),
    )
    return Preparation(
        kept=tuple(kept),
        excluded=tuple(sorted(excluded, key=lambda e: e.entry_id)),
        steps=steps,
        subset_counts=dict(subset_counts),
        family_counts={
            f: {"read": n, "kept": families_kept.get(f, 0)} for f, n in sorted(families_read.items())
        },
        cdhit_command=clusters.command,
        cdhit_version=clusters.version,
    )


def _count(decl: DatasetDeclaration, path: Path) -> int:
    """Entries in an archive source, for a progress total (0 when the format is read at once)."""
    if decl.fmt == "bpseq-archive" and decl.options.get("header") == "rnastrand":
        return count_entries(path)
    return 0
