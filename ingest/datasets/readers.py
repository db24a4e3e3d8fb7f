"""Format readers of the generic dataset importer: each turns one source file into entries.

Every reader yields, in a stable order, one :class:`RawEntry` per readable entry and one
:class:`EntryError` per entry that cannot be read (never an exception for a bad entry, so that one broken
record is reported and the rest imported). A source that cannot be opened at all, or decompresses beyond
its cap, raises (:class:`SourceError`, :class:`comparna.bounded.TooLarge`): nothing is imported then.

Formats (keys of :data:`READERS`):

``bpseq-archive``
    A tarball (any compression) or a directory of ``.bpseq`` files, one entry per file (id = file stem).
    Option ``header="rnastrand"`` reads RNA STRAND's ``#`` provenance lines (:mod:`ingest.strand.reader`).
``ct-archive``
    The same with ``.ct`` files (first structure of each file; id = file stem).
``pair-list-csv``
    A CSV file (optionally gzip-compressed) with one entry per row: id, sequence and a JSON list of
    1-based pairs (e.g. ArchiveII as redistributed with the family-fold splits); an optional dot-bracket
    column is cross-checked against the pairs; the class is read from a column or from the id's prefix.
``dot-bracket-fasta``
    FASTA-like records ``>id`` / sequence line(s) / dot-bracket line(s) (bpRNA ``.dbn`` style).

Pure module: standard library and comparna.rna only.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import tarfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from comparna.bounded import TarBudget, TooLarge, gunzip_capped
from comparna.rna.formats import parse_dot_bracket, read_bpseq, read_ct, read_pair_json
from comparna.rna.structure import Structure, StructureFormatError
from ingest.strand import reader as strand_reader

__all__ = [
    "READERS",
    "EntryError",
    "RawEntry",
    "SourceError",
    "read_source",
]

#: Caps on what a source may decompress to (RNA STRAND: 27 MB in 4666 files; ArchiveII CSV: 6 MB).
MAX_MEMBER_BYTES = strand_reader.MAX_MEMBER_BYTES
MAX_TOTAL_BYTES = strand_reader.MAX_TOTAL_BYTES
MAX_TEXT_BYTES = 512 * 2**20


class SourceError(ValueError):
    """A source file that cannot be read at all (missing, not the declared format, missing columns)."""


@dataclass(frozen=True)
class RawEntry:
    """One entry as read from a source.

    Attributes
    ----------
    entry_id : str
        Id in the source (file stem, CSV id column, FASTA name).
    sequence : str
        Sequence as written (case and symbols kept; the importer normalises).
    structure : Structure
        The source's base pairs.
    rna_class : str
        The dataset's own class of the entry ("" when it gives none).
    source_database, organism, pdb_id : str
        Stored on the target where the source gives them.
    provenance : dict
        Anything else the source says about the entry (stored with the target).
    """

    entry_id: str
    sequence: str
    structure: Structure
    rna_class: str = ""
    source_database: str = ""
    organism: str = ""
    pdb_id: str = ""
    provenance: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def length(self) -> int:
        return self.structure.length


#: An entry that could not be read (``entry_id``, ``member``, ``message``, and ``line``/``position`` from the
#: format error when known): one type for every reader, the RNA STRAND reader's included.
EntryError = strand_reader.StrandError


Item = RawEntry | EntryError


# ------------------------------------------------------------------------------------------ archives of files
def _archive_texts(path: Path, suffix: str) -> Iterator[tuple[str, str, str | EntryError]]:
    """(entry id, member name, text or error) of every ``*suffix`` file of a tarball or directory."""
    if path.is_dir():
        for f in sorted(path.glob(f"*{suffix}")):
            yield f.stem, f.name, _decode(f.stem, f.name, f.read_bytes())
        return
    if not path.is_file():
        raise SourceError(f"{path} does not exist")
    budget = TarBudget(member_cap=2**62, total_cap=MAX_TOTAL_BYTES, what=f"archive {path.name}")
    for tf, m in tar_members(path, budget):
        parts = Path(m.name).parts
        if not (m.isfile() and m.name.endswith(suffix)) or any(p.startswith(".") for p in parts):
            continue
        entry_id = Path(m.name).stem
        if m.size > MAX_MEMBER_BYTES:
            yield entry_id, m.name, EntryError(
                entry_id, m.name, f"{m.size} bytes uncompressed, over the {MAX_MEMBER_BYTES} byte limit"
            )
            continue
        fh = tf.extractfile(m)
        if fh is None:
            yield entry_id, m.name, EntryError(entry_id, m.name, "tar member cannot be read")
            continue
        yield entry_id, m.name, _decode(entry_id, m.name, fh.read())


def tar_members(path: Path, budget: TarBudget) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    """Every member of a (compressed) tar archive, streamed, each admitted by ``budget`` first; an archive
    that cannot be opened is a :class:`SourceError` naming it."""
    try:
        tf = tarfile.open(path, "r|*")
    except tarfile.TarError as exc:
        raise SourceError(f"{path.name} is not a readable tar archive: {exc}") from None
    with tf:
        for m in tf:
            budget.admit(m)
            yield tf, m


def _decode(entry_id: str, member: str, data: bytes) -> str | EntryError:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return EntryError(entry_id, member, f"not UTF-8 text: {exc.reason} at byte {exc.start}")


def _format_error(entry_id: str, member: str, exc: StructureFormatError) -> EntryError:
    return EntryError(entry_id, member, str(exc), exc.line, exc.position)


def read_bpseq_archive(path: Path, *, header: str = "plain") -> Iterator[Item]:
    """Entries of a tarball/directory of BPSEQ files; ``header="rnastrand"`` parses RNA STRAND headers."""
    if header == "rnastrand":
        for item in strand_reader.iter_entries(path):
            yield item if isinstance(item, EntryError) else _from_strand(item)
        return
    if header != "plain":
        raise SourceError(f"unknown BPSEQ header convention {header!r} (plain, rnastrand)")
    for entry_id, member, text in _archive_texts(path, ".bpseq"):
        if isinstance(text, EntryError):
            yield text
            continue
        try:
            sequence, structure = read_bpseq(text)
        except StructureFormatError as exc:
            yield _format_error(entry_id, member, exc)
            continue
        yield RawEntry(entry_id, sequence, structure, provenance={"member": member})


def _from_strand(e: strand_reader.StrandEntry) -> RawEntry:
    # the provenance RNA STRAND targets have always carried (ingest.services.strand before issue 15)
    return RawEntry(
        entry_id=e.entry_id,
        sequence=e.sequence,
        structure=e.structure,
        rna_class=e.rna_class or "",
        source_database=e.source_db or "",
        organism=" ".join(x for x in (e.organism, e.strain) if x),
        pdb_id=e.pdb_id or "",
        provenance={
            "header": e.header,
            "external_file": e.external_file,
            "external_id": e.external_id,
            "ndb_id": e.ndb_id,
            "molecules": e.molecules,
        },
    )


def read_ct_archive(path: Path) -> Iterator[Item]:
    """Entries of a tarball/directory of CT files (the first structure of each)."""
    for entry_id, member, text in _archive_texts(path, ".ct"):
        if isinstance(text, EntryError):
            yield text
            continue
        try:
            sequence, structure = read_ct(text)
        except StructureFormatError as exc:
            yield _format_error(entry_id, member, exc)
            continue
        yield RawEntry(entry_id, sequence, structure, provenance={"member": member})


# ------------------------------------------------------------------------------------------------ text files
def _read_text(path: Path) -> str:
    if not path.is_file():
        raise SourceError(f"{path} does not exist")
    raw = gunzip_capped(path, MAX_TEXT_BYTES) if path.name.endswith(".gz") else _read_plain(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path.name} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def _read_plain(path: Path) -> bytes:
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise TooLarge(f"{path.name} is larger than {MAX_TEXT_BYTES} bytes")
    return path.read_bytes()


def read_pair_list_csv(
    path: Path,
    *,
    id_column: str = "id",
    sequence_column: str = "sequence",
    pairs_column: str = "base_pairs",
    structure_column: str | None = None,
    length_column: str | None = None,
    class_column: str | None = None,
    class_from_id: str | None = None,
    class_names: Mapping[str, str] | None = None,
) -> Iterator[Item]:
    """Entries of a CSV with a JSON pair list per row (1-based pairs, as :func:`read_pair_json`).

    Parameters
    ----------
    structure_column, length_column : str, optional
        A dot-bracket / length column that must agree with the pairs / sequence (else the row is an error).
    class_column : str, optional
        Column holding the entry's class; or ``class_from_id``, a regular expression whose first group,
        matched at the start of the id, is the class (ArchiveII: ``"([^_]+)_"``).
    class_names : mapping, optional
        Class as written -> class stored (e.g. ``{"5s": "5S rRNA"}``); an unlisted class is an error, so
        that a new class is never silently unlabelled.
    """
    try:
        text = _read_text(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"{path.name} cannot be read: {exc}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    wanted = [c for c in (id_column, sequence_column, pairs_column, structure_column, length_column,
                          class_column) if c]
    missing = [c for c in wanted if c not in (reader.fieldnames or [])]
    if missing:
        raise SourceError(f"{path.name}: no column(s) {', '.join(missing)} (found {reader.fieldnames})")
    pattern = re.compile(class_from_id) if class_from_id else None
    seen: set[str] = set()
    for row in reader:
        line = reader.line_num
        entry_id = (row.get(id_column) or "").strip()
        if not entry_id:
            yield EntryError(f"line-{line}", path.name, "empty id", line)
            continue
        if entry_id in seen:
            yield EntryError(entry_id, path.name, "duplicate entry id in the input", line)
            continue
        seen.add(entry_id)
        item = _csv_row(row, entry_id, line, path.name, sequence_column, pairs_column, structure_column,
                        length_column, class_column, pattern, class_names)
        yield item


def _csv_row(row, entry_id, line, member, sequence_column, pairs_column, structure_column, length_column,
             class_column, pattern, class_names) -> Item:
    sequence = (row.get(sequence_column) or "").strip()
    if not sequence:
        return EntryError(entry_id, member, "empty sequence", line)
    if length_column and (row.get(length_column) or "").strip() != str(len(sequence)):
        return EntryError(entry_id, member, f"length column {row.get(length_column)!r} is not the sequence "
                          f"length {len(sequence)}", line)
    try:
        structure = read_pair_json(row.get(pairs_column) or "", length=len(sequence))
        if structure_column:
            db = parse_dot_bracket(row.get(structure_column) or "", length=len(sequence))
            if db.pairs != structure.pairs:
                return EntryError(entry_id, member, "the dot-bracket and the pair list disagree", line)
    except StructureFormatError as exc:
        return EntryError(entry_id, member, str(exc), line, exc.position)
    raw_class = ""
    if class_column:
        raw_class = (row.get(class_column) or "").strip()
    elif pattern is not None:
        m = pattern.match(entry_id)
        if m is None:
            return EntryError(entry_id, member, f"id does not start with a class ({pattern.pattern})", line)
        raw_class = m.group(1)
    rna_class = raw_class
    if class_names is not None and raw_class:
        if raw_class not in class_names:
            return EntryError(entry_id, member, f"unknown class {raw_class!r}", line)
        rna_class = class_names[raw_class]
    provenance = {"line": line}
    if raw_class:
        provenance["class_as_written"] = raw_class
    return RawEntry(entry_id, sequence, structure, rna_class=rna_class, provenance=provenance)


_STRUCTURE_CHARS = re.compile(r"^[.()\[\]{}<>A-Za-z]+$")
_SEQUENCE_CHARS = re.compile(r"^[A-Za-z]+$")


def read_dotbracket_fasta(path: Path) -> Iterator[Item]:
    """Entries of ``>id`` records each followed by sequence line(s) and then dot-bracket line(s).

    A line holding any of ``.()[]{}<>`` starts the structure; sequence and structure lengths must agree.
    """
    try:
        text = _read_text(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"{path.name} cannot be read: {exc}") from None
    records: list[tuple[str, int, list[str], list[str]]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith((";", "#")):
            continue
        if s.startswith(">"):
            words = s[1:].split()
            records.append((words[0] if words else "", n, [], []))
            continue
        if not records:
            raise SourceError(f"{path.name}: line {n}: text before the first '>' header")
        _, _, seq, struct = records[-1]
        (struct if (struct or re.search(r"[.()\[\]{}<>]", s)) else seq).append(s)
    seen: set[str] = set()
    for name, line, seq, struct in records:
        entry_id = name or f"line-{line}"
        if not name:
            yield EntryError(entry_id, path.name, "header without a name", line)
            continue
        if name in seen:
            yield EntryError(name, path.name, "duplicate entry id in the input", line)
            continue
        seen.add(name)
        sequence, dot_bracket = "".join(seq), "".join(struct)
        if not sequence or not _SEQUENCE_CHARS.match(sequence):
            yield EntryError(name, path.name, "missing or non-letter sequence", line)
            continue
        if not dot_bracket or not _STRUCTURE_CHARS.match(dot_bracket):
            yield EntryError(name, path.name, "missing or unreadable dot-bracket structure", line)
            continue
        try:
            structure = parse_dot_bracket(dot_bracket, length=len(sequence))
        except StructureFormatError as exc:
            yield EntryError(name, path.name, str(exc), line, exc.position)
            continue
        yield RawEntry(name, sequence, structure, provenance={"line": line})


#: Format name -> reader(path, **options).
READERS: dict[str, Callable[..., Iterator[Item]]] = {
    "bpseq-archive": read_bpseq_archive,
    "ct-archive": read_ct_archive,
    "pair-list-csv": read_pair_list_csv,
    "dot-bracket-fasta": read_dotbracket_fasta,
}


def read_source(path: str | Path, fmt: str, options: Mapping[str, Any] | None = None) -> Iterator[Item]:
    """Entries of ``path`` read as format ``fmt`` (a key of :data:`READERS`) with the declared options."""
    if fmt not in READERS:
        raise SourceError(f"unknown dataset format {fmt!r}; known: {', '.join(sorted(READERS))}")
    return READERS[fmt](Path(path), **dict(options or {}))
