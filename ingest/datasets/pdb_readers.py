"""Readers of the PDB-derived benchmark sets (issue 38): entries that carry more than one pair definition,
the source's own subsets and clusters, and the source's own exclusions.

Formats (keys of :data:`PDB_READERS`; the generic ones are in :mod:`ingest.datasets.readers`):

``grouped-pair-csv``
    A CSV with a JSON list of 1-based pairs per row and a column naming the row's published set (the
    SPOT-RNA PDB test sets TS1/TS2/TS3/TS_hard, bpRNA TS0 as converted by RNAformer). Multiplets are kept
    (the extended definition); the standard definition is the labelled pairs whose bases are A-U, G-C or
    G-U (by identity: the labels carry no Leontis-Westhof class). Rows with the same sequence and the same
    pairs (TS_hard repeats 28 TS1 chains) are one entry in every set that lists it. A non-empty
    dot-bracket column must agree with the pairs.
``dot-bracket-csv``
    A CSV with a sequence and a dot-bracket column with every bracket type (``()[]{}<>``, ``Aa`` ...),
    e.g. RNA3DB-2D's ``Structure_Corrected``: a row with unmatched brackets is an error (never guessed);
    a split column and a cluster column (the RNA3DB component) are read as the entry's set and cluster.
``mmcif-archive``
    A tarball of mmCIF files: every nucleic-acid chain is extracted and annotated by the project's own
    pipeline (:mod:`ingest.pdb`: gemmi, RNApolis) into the standard and the extended definition; a chain
    that the PDB rules exclude (SCIENCE.md §3: too short, backbone break, DNA, pairs only with other
    strands, no standard pair ...) is an entry with its exclusion.

Pure module: standard library, comparna.rna, ingest.pdb and the generic readers.
"""

from __future__ import annotations

import csv
import gzip
import io
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from comparna.bounded import TarBudget
from comparna.rna.formats import parse_dot_bracket, read_pair_json
from comparna.rna.structure import Structure, StructureFormatError
from ingest.datasets.readers import (
    MAX_MEMBER_BYTES,
    EntryError,
    RawEntry,
    SourceError,
    _read_text,
    tar_members,
)

__all__ = [
    "PDB_READERS",
    "DefinedEntry",
    "read_dot_bracket_csv",
    "read_grouped_pair_csv",
    "read_mmcif_archive",
    "standard_subset",
]

#: Canonical base combinations of the standard definition (order-free), as the annotator's.
_STANDARD = frozenset({frozenset("AU"), frozenset("GC"), frozenset("GU")})


@dataclass(frozen=True)
class DefinedEntry(RawEntry):
    """A :class:`RawEntry` (its ``structure`` is the extended definition) with what PDB-derived sets add.

    Attributes
    ----------
    standard : Structure or None
        The standard definition's pairs (None: the dataset is scored on the extended one only).
    groups : tuple of str
        The source's own sets holding the entry (``TS1``, ``test_set`` ...), as written.
    cluster : str
        The source's cluster of the entry (RNA3DB component), "" when it declares none.
    exclusion : str
        Why the source's rules leave the entry out (an annotated chain the PDB rules exclude), "" if kept.
    standard_classes, extended_classes : tuple
        ``(i, j, Leontis-Westhof class)`` of annotated pairs (mmCIF entries only).
    """

    standard: Structure | None = None
    groups: tuple[str, ...] = ()
    cluster: str = ""
    exclusion: str = ""
    standard_classes: tuple[tuple[int, int, str], ...] = ()
    extended_classes: tuple[tuple[int, int, str], ...] = ()


Item = DefinedEntry | EntryError


def standard_subset(sequence: str, structure: Structure) -> Structure:
    """The pairs of ``structure`` whose bases are A-U, G-C or G-U (upper-cased, T as U)."""
    seq = sequence.upper().replace("T", "U")
    keep = [(i, j) for i, j in structure.pairs if frozenset((seq[i - 1], seq[j - 1])) in _STANDARD]
    return Structure.from_pairs(structure.length, keep)


def _rows(path: Path, wanted: list[str]) -> tuple[csv.DictReader, str]:
    try:
        text = _read_text(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"{path.name} cannot be read: {exc}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in wanted if c and c not in (reader.fieldnames or [])]
    if missing:
        raise SourceError(f"{path.name}: no column(s) {', '.join(missing)} (found {reader.fieldnames})")
    return reader, path.name


def read_grouped_pair_csv(
    path: Path,
    *,
    group_column: str = "set",
    id_column: str = "pdb_chain",
    fallback_id_column: str = "rnaformer_id",
    sequence_column: str = "sequence",
    pairs_column: str = "base_pairs",
    structure_column: str | None = "dot_bracket",
    standard: bool = True,
    pdb_ids: bool = True,
    keep_columns: tuple[str, ...] = (),
) -> Iterator[Item]:
    """Entries of a CSV of published sets with JSON pair lists (module docstring).

    ``pdb_ids``: the id column names PDB chains (``5nwq-1-A``, ``6SY4_C``): the PDB id is its first part.

    The entry id is ``<set>_<id>`` (``<set>_rnaformer-<fallback id>`` when the id column is empty); a row
    repeating an earlier entry (same sequence, same pairs) adds its set to that entry instead.
    """
    reader, member = _rows(path, [group_column, id_column, fallback_id_column, sequence_column, pairs_column,
                                  structure_column or ""])
    entries: dict[str, DefinedEntry | EntryError] = {}
    first_of: dict[tuple[str, tuple], str] = {}
    for row in reader:
        line = reader.line_num
        group = (row.get(group_column) or "").strip()
        own = (row.get(id_column) or "").strip()
        fallback = (row.get(fallback_id_column) or "").strip()
        entry_id = f"{group}_{own}" if own else f"{group}_rnaformer-{fallback}"
        if entry_id in entries:
            error = EntryError(entry_id, member, "duplicate entry id in the input", line)
            entries[f"{entry_id}@{line}"] = error
            continue
        sequence = (row.get(sequence_column) or "").strip()
        if not sequence:
            entries[entry_id] = EntryError(entry_id, member, "empty sequence", line)
            continue
        try:
            structure = read_pair_json(row.get(pairs_column) or "", length=len(sequence))
            db = (row.get(structure_column) or "").strip() if structure_column else ""
            if db and parse_dot_bracket(db, length=len(sequence)).pairs != structure.pairs:
                entries[entry_id] = EntryError(entry_id, member, "the dot-bracket and the pair list disagree",
                                               line)
                continue
        except StructureFormatError as exc:
            entries[entry_id] = EntryError(entry_id, member, str(exc), line, exc.position)
            continue
        key = (sequence, tuple(structure.pairs))
        if key in first_of:  # the same chain and labels in another published set: one entry in both
            earlier = entries[first_of[key]]
            assert isinstance(earlier, DefinedEntry)
            also = [*earlier.provenance.get("also_listed_as", []), entry_id]
            entries[first_of[key]] = _with(earlier, groups=(*earlier.groups, group), also_listed_as=also)
            continue
        first_of[key] = entry_id
        provenance = {"line": line, "set": group, **{c: row.get(c, "") for c in keep_columns}}
        entries[entry_id] = DefinedEntry(
            entry_id, sequence, structure,
            pdb_id=own.split("-")[0].split("_")[0].upper()[:8] if own and pdb_ids else "",
            provenance=provenance, standard=standard_subset(sequence, structure) if standard else None,
            groups=(group,),
        )
    yield from entries.values()


def _with(entry: DefinedEntry, *, groups: tuple[str, ...], also_listed_as: list[str]) -> DefinedEntry:
    return DefinedEntry(
        entry.entry_id, entry.sequence, entry.structure, entry.rna_class, entry.source_database,
        entry.organism, entry.pdb_id, {**entry.provenance, "also_listed_as": also_listed_as},
        standard=entry.standard, groups=groups, cluster=entry.cluster,
    )


def read_dot_bracket_csv(
    path: Path,
    *,
    id_columns: tuple[str, ...] = ("PDB_ID", "Chain_ID"),
    sequence_column: str = "Sequence_Canonical",
    structure_column: str = "Structure_Corrected",
    group_column: str | None = "dataset",
    cluster_column: str | None = "component_x",
    cluster_prefix: str = "RNA3DB ",
    keep_columns: tuple[str, ...] = (),
) -> Iterator[Item]:
    """Entries of a CSV with a dot-bracket column holding every bracket type (module docstring)."""
    reader, member = _rows(path, [*id_columns, sequence_column, structure_column, group_column or "",
                                  cluster_column or ""])
    seen: set[str] = set()
    for row in reader:
        line = reader.line_num
        entry_id = "_".join((row.get(c) or "").strip() for c in id_columns)
        if entry_id in seen:
            yield EntryError(entry_id, member, "duplicate entry id in the input", line)
            continue
        seen.add(entry_id)
        sequence = (row.get(sequence_column) or "").strip()
        if not sequence:
            yield EntryError(entry_id, member, "empty sequence", line)
            continue
        try:
            structure = parse_dot_bracket(row.get(structure_column) or "", length=len(sequence))
        except StructureFormatError as exc:
            yield EntryError(entry_id, member, f"{structure_column}: {exc}", line, exc.position)
            continue
        cluster = (row.get(cluster_column) or "").strip() if cluster_column else ""
        group = (row.get(group_column) or "").strip() if group_column else ""
        yield DefinedEntry(
            entry_id, sequence, structure, pdb_id=(row.get(id_columns[0]) or "").strip().upper(),
            provenance={"line": line, **{c: row.get(c, "") for c in keep_columns}},
            groups=(group,) if group else (), cluster=f"{cluster_prefix}{cluster}" if cluster else "",
        )


def read_mmcif_archive(path: Path, *, suffix: str = ".cif") -> Iterator[Item]:
    """One entry per nucleic-acid chain of every mmCIF file of a tarball (or directory), annotated here.

    The entry id is ``<file stem>:<chain>``; a file that cannot be parsed is one error ``<file stem>``.
    """
    from ingest.pdb.annotate import SINGLE_CHAIN_RULE, annotate_file  # gemmi/RNApolis: only when read
    from ingest.pdb.extract import StructureFileError

    with tempfile.TemporaryDirectory(prefix="comparna-mmcif-") as tmp:
        for stem, member, file in _cif_files(path, suffix, Path(tmp)):
            try:
                annotated = annotate_file(file)
            except StructureFileError as exc:
                yield EntryError(stem, member, f"unreadable structure file: {exc}")
                continue
            for chain in annotated.chains:
                standard, extended = chain.standard_structure(), chain.extended_structure()
                yield DefinedEntry(
                    f"{stem}:{chain.chain}", chain.sequence, extended, source_database="RCSB PDB",
                    pdb_id=stem.split("_")[0].upper(),
                    provenance={
                        "file": member, "chain": chain.chain, "models": annotated.model_count,
                        "author_numbers": [str(a) for a in chain.author_numbers],
                        "modified": [list(m) for m in chain.modified],
                        "annotator": "RNApolis annotator (Leontis-Westhof classes), pairs present in all "
                        "models",
                        "inter_chain_pairs": chain.inter_chain_json(),
                        "incomplete_bases": chain.incomplete_json(),
                        "single_chain_rule": SINGLE_CHAIN_RULE,
                    },
                    standard=standard, exclusion=chain.excluded or "",
                    standard_classes=tuple(chain.standard_pairs),
                    extended_classes=tuple(chain.extended_pairs),
                )
            file.unlink(missing_ok=True)


def _cif_files(path: Path, suffix: str, tmp: Path) -> Iterator[tuple[str, str, Path]]:
    if path.is_dir():
        for f in sorted(path.rglob(f"*{suffix}")):
            yield f.name[: -len(suffix)], f.name, f
        return
    if not path.is_file():
        raise SourceError(f"{path} does not exist")
    budget = TarBudget(member_cap=MAX_MEMBER_BYTES, total_cap=512 * 2**20, what=f"archive {path.name}")
    for tf, m in tar_members(path, budget):
        name = Path(m.name).name
        if not (m.isfile() and name.endswith(suffix)) or name.startswith("."):
            continue
        fh = tf.extractfile(m)
        if fh is None:
            continue
        file = tmp / name
        file.write_bytes(fh.read())
        yield name[: -len(suffix)], m.name, file


#: Format name -> reader(path, **options).
PDB_READERS: dict[str, Callable[..., Iterator[Item]]] = {
    "grouped-pair-csv": read_grouped_pair_csv,
    "dot-bracket-csv": read_dot_bracket_csv,
    "mmcif-archive": read_mmcif_archive,
}

