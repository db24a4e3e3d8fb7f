"""RNA STRAND benchmark preparation: filters, redundancy removal and subsets (SCIENCE.md §3).

Steps, each entry excluded by the first one it fails:

1. ``malformed``  -- the BPSEQ file cannot be parsed;
2. ``too_short``  -- fewer than 20 nt;
3. ``non_acgu``   -- after upper-casing and T->U, a symbol other than A, C, G, U (N, IUPAC, modified);
4. ``redundant``  -- CD-HIT-EST, >= 90 % identity and >= 70 % coverage of the longer sequence, against the
   entry kept for its cluster (the longest; ties: smallest id).

Kept entries keep the file's pairs as given (the extended pair definition).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from comparna.rna.redundancy import remove_redundant
from ingest.strand.reader import StrandEntry, StrandError, count_entries, iter_entries

__all__ = [
    "LENGTH_BINS",
    "MIN_LENGTH",
    "REASONS",
    "ExcludedEntry",
    "KeptEntry",
    "StrandPreparation",
    "normalise_sequence",
    "prepare_rnastrand",
    "screen_entry",
    "strand_subsets",
]

MIN_LENGTH = 20
# (slug, lowest length, highest length or None) -- SCIENCE.md §3: short 20-200, medium 201-800, long > 800.
LENGTH_BINS = (("short", 20, 200), ("medium", 201, 800), ("long", 801, None))
REASONS = {
    "malformed": "malformed BPSEQ file",
    "too_short": f"shorter than {MIN_LENGTH} nt",
    "non_acgu": "non-ACGU symbols",
    "redundant": "redundant (CD-HIT-EST 90 % identity, 70 % coverage of the longer)",
}
_ACGU = frozenset("ACGU")


def strand_subsets(length: int, is_pseudoknotted: bool) -> list[str]:
    """Subset slugs an RNA STRAND target belongs to.

    ``"all"``, its length bin (``"short"`` 20-200, ``"medium"`` 201-800, ``"long"`` > 800), and when
    pseudoknotted also ``"pk"`` and ``"pk-<bin>"``.

    Raises
    ------
    ValueError
        For a length below 20 (such entries are not in the benchmark).
    """
    if length < MIN_LENGTH:
        raise ValueError(f"length {length} is below the RNA STRAND minimum of {MIN_LENGTH}")
    bin_slug = next(s for s, lo, hi in LENGTH_BINS if length >= lo and (hi is None or length <= hi))
    out = ["all", bin_slug]
    if is_pseudoknotted:
        out += ["pk", f"pk-{bin_slug}"]
    return out


def normalise_sequence(sequence: str) -> str:
    """Upper-case and T -> U (SCIENCE.md §3)."""
    return sequence.upper().replace("T", "U")


@dataclass(frozen=True)
class ExcludedEntry:
    """An entry left out, with a reason code (keys of :data:`REASONS`) and a human-readable detail."""

    entry_id: str
    reason: str
    detail: str
    representative: str | None = None  # for reason "redundant": the entry kept instead


@dataclass(frozen=True)
class KeptEntry:
    """An entry in the benchmark: the entry as read, its normalised sequence and its subsets."""

    entry: StrandEntry
    sequence: str
    subsets: tuple[str, ...]
    redundant_members: tuple[str, ...] = ()  # entries removed as redundant of this one

    @property
    def entry_id(self) -> str:
        return self.entry.entry_id


@dataclass(frozen=True)
class StrandPreparation:
    """Result of :func:`prepare_rnastrand`.

    Attributes
    ----------
    kept : tuple of KeptEntry
        Sorted by entry id.
    excluded : tuple of ExcludedEntry
        Sorted by entry id.
    steps : tuple of (str, int)
        Entries remaining after each step: ``read``, ``parsed``, ``length>=20``, ``ACGU only``,
        ``non-redundant``.
    subset_counts : Mapping[str, int]
        Number of kept entries per subset slug.
    cdhit_command, cdhit_version : provenance of the redundancy step.
    """

    kept: tuple[KeptEntry, ...]
    excluded: tuple[ExcludedEntry, ...]
    steps: tuple[tuple[str, int], ...]
    subset_counts: Mapping[str, int] = field(default_factory=dict)
    cdhit_command: tuple[str, ...] = ()
    cdhit_version: str = ""

    @property
    def redundant_of(self) -> dict[str, str]:
        """Removed entry id -> representative kept."""
        return {e.entry_id: e.representative for e in self.excluded if e.representative is not None}

    def exclusion_counts(self) -> dict[str, int]:
        """Reason code -> number of entries excluded for it."""
        return dict(Counter(e.reason for e in self.excluded))


def screen_entry(item: StrandEntry | StrandError) -> tuple[str | None, ExcludedEntry | None]:
    """Apply the non-redundancy filters to one entry.

    Returns
    -------
    (str or None, ExcludedEntry or None)
        The normalised sequence when the entry passes, else ``(None, exclusion)``.
    """
    if isinstance(item, StrandError):
        return None, ExcludedEntry(item.entry_id, "malformed", item.message)
    if item.length < MIN_LENGTH:
        return None, ExcludedEntry(item.entry_id, "too_short", f"{item.length} nt")
    seq = normalise_sequence(item.sequence)
    bad = sorted(set(seq) - _ACGU)
    if bad:
        return None, ExcludedEntry(item.entry_id, "non_acgu", "symbols " + " ".join(repr(c) for c in bad))
    return seq, None


def prepare_rnastrand(
    path: str | os.PathLike[str],
    *,
    progress: Callable[[int, int], None] | None = None,
    cdhit_path: str = "cd-hit-est",
    threads: int | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> StrandPreparation:
    """Read, filter and de-duplicate RNA STRAND; return the benchmark entries and every exclusion.

    Parameters
    ----------
    path : path
        The ``rna_strand_v2.0_bpseq.tar.gz`` tarball or a directory of ``.bpseq`` files.
    progress : callable, optional
        Called as ``progress(done, total)`` after each entry read and once more when the redundancy step
        is finished (``done == total``).
    cdhit_path, threads, workdir
        Passed to :func:`comparna.rna.redundancy.remove_redundant`.

    Raises
    ------
    comparna.rna.redundancy.CdHitError
        When cd-hit-est is missing or fails.
    """
    total = count_entries(Path(path)) if progress is not None else 0
    candidates: dict[str, tuple[StrandEntry, str]] = {}
    excluded: list[ExcludedEntry] = []
    read = parsed = long_enough = 0
    for done, item in enumerate(iter_entries(Path(path)), start=1):
        read += 1
        seq, why = screen_entry(item)
        if why is None or why.reason != "malformed":
            parsed += 1
        if why is None or why.reason not in ("malformed", "too_short"):
            long_enough += 1
        if why is not None:
            excluded.append(why)
        else:
            assert isinstance(item, StrandEntry) and seq is not None
            if item.entry_id in candidates:
                excluded.append(ExcludedEntry(item.entry_id, "malformed", "duplicate entry id in the input"))
            else:
                candidates[item.entry_id] = (item, seq)
        if progress is not None:
            progress(done, max(total, done))

    clusters = remove_redundant(
        {k: s for k, (_, s) in candidates.items()}, cdhit_path=cdhit_path, threads=threads, workdir=workdir
    )
    members: dict[str, list[str]] = clusters.clusters()
    for member, rep in clusters.member_of.items():
        pc = clusters.identity.get(member)
        detail = f"{pc:.2f} % identical to {rep}"
        excluded.append(ExcludedEntry(member, "redundant", detail, representative=rep))

    kept = []
    subset_counts: Counter[str] = Counter()
    for rep in sorted(clusters.representatives):
        entry, seq = candidates[rep]
        subsets = tuple(strand_subsets(entry.length, entry.structure.is_pseudoknotted))
        subset_counts.update(subsets)
        kept.append(KeptEntry(entry, seq, subsets, tuple(members[rep])))
    if progress is not None:
        progress(max(total, read), max(total, read))
    steps = (
        ("read", read),
        ("parsed", parsed),
        (f"length>={MIN_LENGTH}", long_enough),
        ("ACGU only", len(candidates)),
        ("non-redundant", len(kept)),
    )
    return StrandPreparation(
        kept=tuple(kept),
        excluded=tuple(sorted(excluded, key=lambda e: e.entry_id)),
        steps=steps,
        subset_counts=dict(subset_counts),
        cdhit_command=clusters.command,
        cdhit_version=clusters.version,
    )
