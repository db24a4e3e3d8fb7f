"""Reader for the RNA STRAND v2.0 BPSEQ export (Andronescu et al., BMC Bioinformatics 2008, 9:340).

One file per entry, ``<ID>.bpseq``, whose ``#`` header lines give the provenance, e.g.::

    # File ASE_00001.ct
    # RNA SSTRAND database, RNase P RNA, Acidianus ambivalens, strain DSM 3772
    # External source: RNase P Database, file name: A.ambivalens.ct2

    # External source: Gutell Lab CRW, file name: d.16.b.E.coli.bpseq, ID: J01695
    # External source: RCSB Protein Data Bank 157D, number of molecules: 2

Only RNase P (ASE) headers name the RNA class and organism. For the databases devoted to one RNA class
(tmRNA, Sprinzl tRNA, SRP) the class follows from the source; for CRW it is encoded in the file name
(``<kind>.<class>.<domain>.<organism>...``: 5, 16, 233 = 5S/16S/23S rRNA, I1/I2 = group I/II intron).
Rfam, PDB and NDB entries carry no class.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path

from comparna.bounded import TarBudget
from comparna.rna.formats import read_bpseq
from comparna.rna.structure import Structure, StructureFormatError

__all__ = [
    "SOURCES",
    "StrandEntry",
    "StrandError",
    "StrandHeader",
    "count_entries",
    "iter_entries",
    "parse_entry",
    "parse_header",
]

# ID prefix -> source database (SCIENCE.md §3 names).
SOURCES = {
    "ASE": "RNase P Database",
    "CRW": "Gutell Lab CRW",
    "TMR": "tmRNA database",
    "SPR": "Sprinzl tRNA database",
    "SRP": "SRP database",
    "RFA": "Rfam",
    "PDB": "PDB",
    "NDB": "NDB",
}
# The header's "External source:" text starts with one of these for each prefix.
_SOURCE_HEADER = {
    "ASE": "RNase P Database",
    "CRW": "Gutell Lab CRW",
    "TMR": "tmRNA Database",
    "SPR": "Sprinzl tRNA database",
    "SRP": "SRP Database",
    "RFA": "Rfam database",
    "PDB": "RCSB Protein Data Bank",
    "NDB": "Nucleic Acid Database",
}
_CLASS_OF_SOURCE = {"TMR": "tmRNA", "SPR": "tRNA", "SRP": "SRP RNA"}
_CRW_CLASS = {"5": "5S rRNA", "16": "16S rRNA", "233": "23S rRNA", "I1": "group I intron",
              "I2": "group II intron"}

_ID = re.compile(r"^([A-Z]{3})_\d+$")
_STRUCT_DB = re.compile(
    r"^(?:RCSB Protein Data Bank|Nucleic Acid Database)\s+(\S+)\s*,\s*number of molecules:\s*(\d+)"
)


@dataclass(frozen=True)
class StrandHeader:
    """Provenance parsed from the ``#`` lines of one file."""

    source_db: str | None = None
    external_source: str | None = None
    rna_class: str | None = None
    organism: str | None = None
    strain: str | None = None
    pdb_id: str | None = None
    ndb_id: str | None = None
    molecules: int | None = None
    external_file: str | None = None
    external_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class StrandEntry(StrandHeader):
    """One RNA STRAND entry as read: its header's provenance (the :class:`StrandHeader` fields) with the
    sequence as written in the file and the file's pairs.

    Attributes
    ----------
    entry_id : str
        e.g. ``"ASE_00001"``.
    source_db : str
        Source database (values of :data:`SOURCES`); always known for an entry.
    sequence : str
        Raw sequence (case and symbols as in the file).
    structure : Structure
        Base pairs as given.
    header : tuple of str
        The ``#`` lines, without the ``#``.
    """

    entry_id: str
    source_db: str
    sequence: str
    structure: Structure
    header: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def length(self) -> int:
        return self.structure.length


@dataclass(frozen=True)
class StrandError:
    """A file that could not be read; ``line``/``position`` come from the StructureFormatError."""

    entry_id: str
    member: str
    message: str
    line: int | None = None
    position: int | None = None


def _split_fields(text: str) -> dict[str, str]:
    """Parse ``key: value`` parts after the first comma-separated field ("file name: x, ID: y")."""
    out: dict[str, str] = {}
    for part in re.split(r",\s*(?=(?:file name|ID|number of molecules)\s*:)", text):
        key, sep, value = part.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_header(entry_id: str, lines: list[str]) -> StrandHeader:
    """Parse the ``#`` lines of one entry (without the leading ``#``) into a :class:`StrandHeader`."""
    m = _ID.match(entry_id)
    prefix = m.group(1) if m else None
    source_db = SOURCES.get(prefix) if prefix else None
    info: dict[str, object] = {"source_db": source_db, "rna_class": _CLASS_OF_SOURCE.get(prefix or "")}
    for raw in lines:
        line = raw.strip()
        if line.startswith("RNA SSTRAND database"):
            # "RNA SSTRAND database, RNase P RNA, Acidianus ambivalens, strain DSM 3772"
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 2 and parts[1]:
                info["rna_class"] = parts[1]
            if len(parts) >= 3 and parts[2]:
                info["organism"] = parts[2]
            for p in parts[3:]:
                if p.startswith("strain "):
                    info["strain"] = p[len("strain "):].strip()
        elif line.startswith("External source:"):
            ext = line[len("External source:"):].strip()
            info["external_source"] = ext
            fields = _split_fields(ext)
            info["external_file"] = fields.get("file name")
            info["external_id"] = fields.get("ID")
            sm = _STRUCT_DB.match(ext)
            if sm:
                code = sm.group(1)
                if ext.startswith("RCSB"):
                    info["pdb_id"] = code.upper()
                else:
                    info["ndb_id"] = code
                info["molecules"] = int(sm.group(2))
            if source_db is None:
                for pfx, text in _SOURCE_HEADER.items():
                    if ext.startswith(text):
                        info["source_db"] = SOURCES[pfx]
                        prefix = pfx
    if prefix == "CRW" and info.get("external_file"):
        code = str(info["external_file"]).split(".")
        if len(code) > 1:
            info["rna_class"] = _CRW_CLASS.get(code[1], info.get("rna_class"))
    return StrandHeader(**info)  # type: ignore[arg-type]


def parse_entry(entry_id: str, text: str, *, member: str = "") -> StrandEntry | StrandError:
    """Parse one BPSEQ file's text; a malformed file gives a :class:`StrandError`, never an exception."""
    try:
        sequence, structure = read_bpseq(text)
    except StructureFormatError as exc:
        return StrandError(entry_id, member or entry_id, str(exc), exc.line, exc.position)
    header_lines = [ln.strip()[1:].strip() for ln in text.splitlines() if ln.strip().startswith("#")]
    h = parse_header(entry_id, header_lines)
    if h.source_db is None:
        return StrandError(entry_id, member or entry_id, "unknown source database (ID prefix and header)")
    provenance = {f.name: getattr(h, f.name) for f in fields(StrandHeader)}
    return StrandEntry(
        entry_id=entry_id, sequence=sequence, structure=structure, header=tuple(header_lines), **provenance
    )


def _decode(entry_id: str, member: str, data: bytes) -> str | StrandError:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return StrandError(entry_id, member, f"not UTF-8 text: {exc.reason} at byte {exc.start}")


def _wanted(member: tarfile.TarInfo) -> bool:
    # The public mirror's tarball also holds a Jupyter ".ipynb_checkpoints/ASE_00001-checkpoint.bpseq":
    # anything under a hidden directory is not an entry.
    parts = Path(member.name).parts
    return member.isfile() and member.name.endswith(".bpseq") and not any(p.startswith(".") for p in parts)


#: Caps on what a tarball may decompress to (the real v2.0 export: 4666 files, largest 41 KB, 27 MB in
#: all). A larger member is recorded as an unreadable entry; a larger whole stops the import (TooLarge).
MAX_MEMBER_BYTES = 4 * 2**20
MAX_TOTAL_BYTES = 1024 * 2**20


def _budget(path: Path) -> TarBudget:
    return TarBudget(member_cap=2**62, total_cap=MAX_TOTAL_BYTES, what=f"RNA STRAND archive {path.name}")


def count_entries(path: str | Path) -> int:
    """Number of ``.bpseq`` files in a tarball or directory (for a progress total).

    Raises
    ------
    TooLarge
        When the tarball decompresses to more than :data:`MAX_TOTAL_BYTES`.
    """
    p = Path(path)
    if p.is_dir():
        return sum(1 for _ in p.glob("*.bpseq"))
    budget = _budget(p)
    n = 0
    with tarfile.open(p, "r|*") as tf:
        for m in tf:
            budget.admit(m)
            n += _wanted(m)
    return n


def iter_entries(path: str | Path) -> Iterator[StrandEntry | StrandError]:
    """Yield every entry of an RNA STRAND BPSEQ tarball (streamed, nothing extracted) or directory.

    Tarball members are yielded in archive order, directory files sorted by name. Non-``.bpseq`` members
    and files under hidden directories are skipped. A file that cannot be read or parsed, or is larger
    than :data:`MAX_MEMBER_BYTES`, yields a :class:`StrandError`.

    Raises
    ------
    TooLarge
        When the tarball decompresses to more than :data:`MAX_TOTAL_BYTES` (nothing more is read).
    """
    p = Path(path)
    if p.is_dir():
        for f in sorted(p.glob("*.bpseq")):
            text = _decode(f.stem, f.name, f.read_bytes())
            yield text if isinstance(text, StrandError) else parse_entry(f.stem, text, member=f.name)
        return
    budget = _budget(p)
    with tarfile.open(p, "r|*") as tf:
        for m in tf:
            budget.admit(m)  # sizes from the tar header: checked before anything is decompressed
            if not _wanted(m):
                continue
            entry_id = Path(m.name).stem
            if m.size > MAX_MEMBER_BYTES:
                yield StrandError(
                    entry_id, m.name, f"{m.size} bytes uncompressed, over the {MAX_MEMBER_BYTES} byte limit"
                )
                continue
            fh = tf.extractfile(m)
            if fh is None:
                yield StrandError(entry_id, m.name, "tar member cannot be read")
                continue
            text = _decode(entry_id, m.name, fh.read())
            yield text if isinstance(text, StrandError) else parse_entry(entry_id, text, member=m.name)
