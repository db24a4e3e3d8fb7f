"""PDB-derived benchmark sets as declarations (issue 38): the source's own subsets and clusters, two pair
definitions, and the exclusions these sets need beyond the RNA STRAND rules.

A :class:`PdbDerivedDeclaration` is a :class:`~ingest.datasets.declaration.DatasetDeclaration` read by a
reader of :mod:`ingest.datasets.pdb_readers` and prepared by :func:`prepare_pdb_derived`, which applies
the generic filters (``malformed``, ``too_short``, ``non_acgu``, ``redundant``: SCIENCE.md §3) and two more,
each entry excluded by the first one it fails:

* ``pdb_rules`` -- a chain annotated here that the PDB set's rules exclude (too short, backbone break,
  DNA, pairs only with other strands, no standard pair ...), with the annotator's reason;
* ``no_pairs``  -- a reference without any base pair (an annotation gap, not a finding: RNA3DB-2D's 1duh_A
  is a 45-nt hairpin whose labels are empty), when ``require_pairs`` is set.

Subsets: ``all``; one per published set of the source (``source_subsets``: TS1 ... or the RNA3DB split);
one per length bin; ``pk`` (extended pairs cross), or with both definitions ``pk-standard`` and
``pk-extended``, each ranked under its own definition (as the weekly PDB set).

Pure module: standard library, comparna.rna and the dataset modules.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from comparna.rna.redundancy import remove_redundant
from ingest.datasets.declaration import (
    DatasetDeclaration,
    ExcludedEntry,
    KeptEntry,
    Preparation,
    SubsetSpec,
    screen_entry,
)
from ingest.datasets.pdb_readers import PDB_READERS, DefinedEntry
from ingest.datasets.readers import EntryError, SourceError

__all__ = ["DefinedSubset", "PdbDerivedDeclaration", "prepare_pdb_derived"]


@dataclass(frozen=True)
class DefinedSubset(SubsetSpec):
    """A subset ranked under one pair definition only (blank: every definition of the dataset)."""

    definition: str = ""


@dataclass(frozen=True)
class PdbDerivedDeclaration(DatasetDeclaration):
    """A PDB-derived set (module docstring).

    Parameters
    ----------
    source_subsets : mapping of str to SubsetSpec
        The source's set name as written (``TS1``, ``test_set``) -> the subset it becomes.
    require_pairs : bool
        Exclude references without a base pair (``no_pairs``).
    cluster_name : str
        What the source's cluster of an entry is ("RNA3DB component"): the unit of the clustered
        statistics of these targets (SCIENCE.md §6), "" when the source declares none (Rfam then).
    schedule_priority : int
        Order of the first predictions (:mod:`predictors.scheduling`): 1 = a small test set completed right
        after the first rankings of the priority-0 datasets, 2 = after those.
    what_it_is, what_it_is_not : str
        One sentence each for the home page and the rankings index.
    """

    source_subsets: Mapping[str, SubsetSpec] = field(default_factory=dict)
    require_pairs: bool = True
    cluster_name: str = ""
    schedule_priority: int = 2
    what_it_is: str = ""
    what_it_is_not: str = ""

    @property
    def reasons(self) -> dict[str, str]:
        return {
            **super().reasons,
            "pdb_rules": "excluded by the PDB set's rules (SCIENCE.md §3)",
            "no_pairs": "no base pair in the reference",
        }

    def subsets(self) -> list[SubsetSpec]:
        out: list[SubsetSpec] = [
            SubsetSpec("all", "All RNAs", f"Every {self.short_title} entry that passed the filters.")
        ]
        seen = set()
        for spec in self.source_subsets.values():
            if spec.slug not in seen:
                seen.add(spec.slug)
                out.append(spec)
        out += [SubsetSpec(b.slug, b.name, b.description) for b in self.length_bins]
        if len(self.definitions) > 1:
            out += [
                DefinedSubset(f"pk-{d}", f"Pseudoknotted ({d} pairs)",
                              f"The reference's {d} pairs cross.", d)
                for d in self.definitions
            ]
        else:
            out.append(SubsetSpec("pk", "Pseudoknotted", "The reference has at least two crossing pairs."))
        return out

    def subsets_of_entry(self, entry: DefinedEntry) -> list[str]:
        """Subset slugs of a kept entry."""
        out = ["all"]
        for group in entry.groups:
            spec = self.source_subsets.get(group)
            if spec is not None and spec.slug not in out:
                out.append(spec.slug)
        out += [b.slug for b in self.length_bins if b.holds(entry.length)]
        if len(self.definitions) > 1:
            structures = {"extended": entry.structure, "standard": entry.standard}
            out += [f"pk-{d}" for d in self.definitions
                    if structures.get(d) is not None and structures[d].is_pseudoknotted]
        elif entry.structure.is_pseudoknotted:
            out.append("pk")
        return out


def _screen(decl: PdbDerivedDeclaration, item) -> tuple[str | None, ExcludedEntry | None]:
    seq, why = screen_entry(decl, item)
    if isinstance(item, EntryError) or not isinstance(item, DefinedEntry):
        return seq, why
    normalised = item.sequence.upper().replace("T", "U")
    if item.exclusion:  # the PDB rules come first: a 5-nt duplex strand is that, not "too short" alone
        return None, ExcludedEntry(item.entry_id, "pdb_rules", item.exclusion, sequence=normalised)
    if why is None and decl.require_pairs and not item.structure.pairs:
        return None, ExcludedEntry(item.entry_id, "no_pairs", f"{item.length} nt, no pair in the reference",
                                   sequence=seq or "")
    return seq, why


def prepare_pdb_derived(
    decl: PdbDerivedDeclaration,
    path: str | os.PathLike[str],
    *,
    progress: Callable[[int, int], None] | None = None,
    cdhit_path: str = "cd-hit-est",
    threads: int | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> Preparation:
    """Read, filter and de-duplicate a PDB-derived set (as :func:`~ingest.datasets.declaration.
    prepare_dataset`, with the exclusions and subsets of the module docstring)."""
    if decl.fmt not in PDB_READERS:
        raise SourceError(f"unknown PDB-derived format {decl.fmt!r}; known: {', '.join(sorted(PDB_READERS))}")
    candidates: dict[str, tuple[DefinedEntry, str]] = {}
    excluded: list[ExcludedEntry] = []
    reasons: Counter[str] = Counter()
    read = 0
    for item in PDB_READERS[decl.fmt](Path(path), **dict(decl.options)):
        read += 1
        seq, why = _screen(decl, item)
        if why is not None:
            excluded.append(why)
            reasons[why.reason] += 1
        elif item.entry_id in candidates:
            excluded.append(ExcludedEntry(item.entry_id, "malformed", "duplicate entry id in the input"))
            reasons["malformed"] += 1
        else:
            assert isinstance(item, DefinedEntry) and seq is not None
            candidates[item.entry_id] = (item, seq)
        if progress is not None:
            progress(read, read)
    clusters = remove_redundant(
        {k: s for k, (_, s) in candidates.items()},
        identity=decl.identity,
        coverage_longer=decl.coverage_longer,
        cdhit_path=cdhit_path,
        threads=threads,
        workdir=workdir,
    )
    members = clusters.clusters()
    for member, rep in clusters.member_of.items():
        entry, seq = candidates[member]
        pc = clusters.identity.get(member)
        also = f"; its sets {', '.join(entry.groups)}" if entry.groups else ""
        excluded.append(ExcludedEntry(member, "redundant", f"{pc:.2f} % identical to {rep}{also}",
                                      representative=rep, sequence=seq))
    kept = []
    subset_counts: Counter[str] = Counter()
    for rep in sorted(clusters.representatives):
        entry, seq = candidates[rep]
        subsets = tuple(decl.subsets_of_entry(entry))
        subset_counts.update(subsets)
        kept.append(KeptEntry(entry, seq, subsets, "", tuple(members[rep])))
    steps = (
        ("read", read),
        ("parsed", read - reasons["malformed"]),
        ("PDB rules", read - reasons["malformed"] - reasons["pdb_rules"]),
        (f"length>={decl.min_length}, ACGU only, with pairs", len(candidates)),
        ("non-redundant", len(kept)),
    )
    return Preparation(
        kept=tuple(kept),
        excluded=tuple(sorted(excluded, key=lambda e: e.entry_id)),
        steps=steps,
        subset_counts=dict(subset_counts),
        family_counts={},
        cdhit_command=clusters.command,
        cdhit_version=clusters.version,
    )

