"""The declared benchmark sets: RNA STRAND v2.0, ArchiveII and the PDB-derived sets of
:mod:`ingest.datasets.pdb_catalogue` (``manage.py import_dataset NAME``).

Source files ship with the project under ``data/`` (``data/README.md``: source, licence, sha256);
``COMPARNA_DATASETS_DIR`` names another folder to look in first.
"""

from __future__ import annotations

import os
from pathlib import Path

from ingest.datasets.declaration import DatasetDeclaration, LengthBin
from ingest.datasets.pdb_catalogue import BPRNA_TS0, PDB_HIRES, RNA3DB_2D, SPOT_RNA

__all__ = ["ARCHIVEII", "BPRNA_TS0", "DECLARATIONS", "PDB_HIRES", "RNA3DB_2D", "RNASTRAND", "SPOT_RNA",
           "data_dirs", "get_declaration", "locate_source"]

#: SCIENCE.md §3 length bins (the RNA STRAND subsets' names and descriptions, unchanged).
SHORT = LengthBin("short", "Short (20-200 nt)", 20, 200, "Length 20 to 200 nucleotides.",
                  "Pseudoknotted and 20 to 200 nucleotides.")
MEDIUM = LengthBin("medium", "Medium (201-800 nt)", 201, 800, "Length 201 to 800 nucleotides.",
                   "Pseudoknotted and 201 to 800 nucleotides.")
LONG = LengthBin("long", "Long (> 800 nt)", 801, None, "Longer than 800 nucleotides.",
                 "Pseudoknotted and longer than 800 nucleotides.")

RNASTRAND = DatasetDeclaration(
    name="rnastrand",
    title="RNA STRAND v2.0",
    short_title="RNA STRAND",
    description=(
        "Static benchmark on RNA STRAND v2.0 (Andronescu et al. 2008): length >= 20, A/C/G/U only, "
        "redundancy removed at 90 % identity / 70 % coverage of the longer sequence (CD-HIT-EST). "
        "Not blind: trained methods may have seen these structures."
    ),
    source="rna_strand_v2.0_bpseq.tar.gz",
    sha256="67fec77b66df2269f3dd575d8a4350d52a6de9cba269d167c80fe3311c7e928b",
    fmt="bpseq-archive",
    options={"header": "rnastrand"},
    citation=(
        "Andronescu M, Bereg V, Hoos HH, Condon A. RNA STRAND: the RNA secondary structure and statistical "
        "analysis database. BMC Bioinformatics 9:340 (2008)"
    ),
    url="https://doi.org/10.1186/1471-2105-9-340",
    licence=(
        "RNA STRAND's export carries no licence statement; its entries come from public databases (RNase P "
        "Database, Gutell lab CRW, tmRNA database, Sprinzl tRNA database, SRP database, Rfam, PDB, NDB) "
        "whose terms apply. The web site is offline; this copy is a public mirror of the v2.0 BPSEQ export."
    ),
    provenance="RNA STRAND v2.0 BPSEQ export, 4666 files; the class of an entry comes from its header.",
    length_bins=(SHORT, MEDIUM, LONG),
    families=(),
)

#: ArchiveII's id prefixes and the canonical families (comparna.rna.families) they name.
ARCHIVEII_CLASSES = {
    "5s": "5S rRNA",
    "srp": "SRP RNA",
    "tRNA": "tRNA",
    "tmRNA": "tmRNA",
    "RNaseP": "RNase P RNA",
    "grp1": "group I intron",
    "16s": "16S rRNA",
    "telomerase": "telomerase RNA",
    "23s": "23S rRNA",
}

ARCHIVEII = DatasetDeclaration(
    name="archiveii",
    title="ArchiveII",
    short_title="ArchiveII",
    description=(
        "Static benchmark on ArchiveII (Sloma & Mathews 2016; 3864 RNAs up to 512 nt in 9 families, as "
        "redistributed with family-fold cross-validation splits), under the RNA STRAND rules: length >= 20, "
        "A/C/G/U only, redundancy removed at 90 % identity / 70 % coverage of the longer sequence "
        "(CD-HIT-EST). Not blind: most learned methods were trained on these families."
    ),
    source="archiveii/ArchiveII.csv.gz",
    sha256="b89ccb6d9f73711560ae985c9a85b34738f40910b9b37ce5f4fbb1914c20855b",
    fmt="pair-list-csv",
    options={
        "id_column": "id",
        "sequence_column": "sequence",
        "pairs_column": "base_pairs",
        "structure_column": "structure",
        "length_column": "len",
        "class_from_id": r"([^_]+)_",
        "class_names": ARCHIVEII_CLASSES,
    },
    citation=(
        "Sloma MF, Mathews DH. Exact calculation of loop formation probability identifies folding motifs "
        "in RNA secondary structures. RNA 22:1808-1818 (2016); redistributed in the sinc-lab repository "
        "revisiting_xval_rnafolding (commit 370055d)"
    ),
    url="https://doi.org/10.1261/rna.053694.115",
    licence=(
        "GPL-3.0: redistributed under the licence of the repository this copy comes from "
        "(sinc-lab/revisiting_xval_rnafolding); the original structures come from the databases listed in "
        "ArchiveII's README (cite them too)."
    ),
    provenance=(
        "ArchiveII.csv.gz (columns id, sequence, len, structure, base_pairs; 1-based JSON pairs, "
        "cross-checked against the dot-bracket column); the family is the id prefix. Sequences up to 512 nt."
    ),
    length_bins=(SHORT, MEDIUM),
    family_subsets=True,
    families=tuple(ARCHIVEII_CLASSES.values()),
)

DECLARATIONS: dict[str, DatasetDeclaration] = {
    d.name: d for d in (RNASTRAND, ARCHIVEII, SPOT_RNA, PDB_HIRES, RNA3DB_2D, BPRNA_TS0)
}


def get_declaration(name: str) -> DatasetDeclaration:
    """The declaration called ``name``; KeyError naming the known ones otherwise."""
    try:
        return DECLARATIONS[name]
    except KeyError:
        known = ", ".join(sorted(DECLARATIONS))
        raise KeyError(f"no dataset declared as {name!r}; declared: {known}") from None


def data_dirs() -> list[Path]:
    """Where declared sources are looked for: ``COMPARNA_DATASETS_DIR`` if set, then the project's ``data/``
    (nothing outside the checkout: a clone has only what it ships)."""
    root = Path(__file__).resolve().parents[2]
    dirs = [root / "data"]
    if os.environ.get("COMPARNA_DATASETS_DIR"):
        dirs.insert(0, Path(os.environ["COMPARNA_DATASETS_DIR"]))
    return dirs


def locate_source(decl: DatasetDeclaration) -> Path:
    """The declared source file of ``decl`` (first of :func:`data_dirs` holding it).

    Raises
    ------
    FileNotFoundError
        Naming every place looked at.
    """
    places = [d / decl.source for d in data_dirs()]
    for p in places:
        if p.exists():
            return p
    where = ", ".join(str(p.parent) for p in places)
    raise FileNotFoundError(f"{decl.title}: {decl.source} not found in {where}")
