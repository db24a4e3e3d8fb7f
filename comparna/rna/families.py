"""RNA families as one vocabulary across datasets, Rfam assignments and methods' declared training data.

Benchmark sets name their classes differently (RNA STRAND's header "RNase P RNA", ArchiveII's id prefix
``RNaseP``, Rfam's ``RF00010`` / ``RNaseP_bact_a``), and methods declare their training data in the words
of their papers ("tRNAs, 5S rRNA, ..."). A leakage-aware ranking must compare these, so every label is
mapped onto one canonical family here (:data:`FAMILIES`). The canonical families are the RNA classes of
the Mathews lab structure database (Mathews et al., J Mol Biol 1999; its successor ArchiveII, Sloma &
Mathews, RNA 2016), which is also the set of classes named in RNA STRAND's headers (Andronescu et al., BMC
Bioinformatics 2008): the classes leakage analyses are written in (e.g. ArchiveII's family-fold splits).

An Rfam family that belongs to none of them keeps its own label, ``"Rfam:<accession>"`` (or
``"Rfam:<id>"`` for a model without an accession), so that it is still a family of its own.

Pure module: standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FAMILIES",
    "Family",
    "by_label",
    "by_slug",
    "canonical_family",
    "family_of_rfam",
    "family_slug",
]


@dataclass(frozen=True)
class Family:
    """One canonical RNA family.

    Attributes
    ----------
    label : str
        Shown to users and stored on targets, e.g. ``"RNase P RNA"``.
    slug : str
        URL and subset form, e.g. ``"rnase-p-rna"``.
    aliases : tuple of str
        Other spellings used by datasets and papers (compared case- and punctuation-insensitively).
    rfam : tuple of str
        Rfam accessions and model names (``NAME`` lines) of the family's Rfam models (Rfam 14/15).
    """

    label: str
    slug: str
    aliases: tuple[str, ...] = ()
    rfam: tuple[str, ...] = ()


FAMILIES: tuple[Family, ...] = (
    Family("tRNA", "trna", ("trna", "transfer rna"),
           ("RF00005", "tRNA", "RF01852", "tRNA-Sec", "tRNA1415G")),
    Family("5S rRNA", "5s-rrna", ("5s", "5s ribosomal rna", "5s_rrna"), ("RF00001", "5S_rRNA")),
    Family("16S rRNA", "16s-rrna", ("16s", "16s ribosomal rna", "ssu rrna", "small subunit rrna"),
           ("RF00177", "SSU_rRNA_bacteria", "RF01959", "SSU_rRNA_archaea", "RF01960", "SSU_rRNA_eukarya")),
    Family("23S rRNA", "23s-rrna", ("23s", "23s ribosomal rna", "lsu rrna", "large subunit rrna"),
           ("RF02541", "LSU_rRNA_bacteria", "RF02540", "LSU_rRNA_archaea", "RF02543", "LSU_rRNA_eukarya")),
    Family("SRP RNA", "srp-rna", ("srp", "srp rna", "signal recognition particle rna"),
           ("RF00017", "Metazoa_SRP", "srp-euk", "RF00169", "Bacteria_small_SRP", "RF01854",
            "Bacteria_large_SRP", "RF01855", "Plant_SRP", "RF01502", "Fungi_SRP", "RF01856",
            "Protozoa_SRP", "RF01857", "Archaea_SRP")),
    Family("tmRNA", "tmrna", ("tmrna", "transfer-messenger rna"),
           ("RF00023", "tmRNA", "RF01849", "alpha_tmRNA", "RF01850", "beta_tmRNA", "RF01851", "cyano_tmRNA",
            "RF02544", "mt-tmRNA")),
    Family("RNase P RNA", "rnase-p-rna", ("rnasep", "rnase p", "rnase p rna", "ribonuclease p rna"),
           ("RF00010", "RNaseP_bact_a", "rnaseP-eubact", "RF00011", "RNaseP_bact_b", "RF00373", "RNaseP_arch",
            "RF00009", "RNaseP_nuc")),
    Family("group I intron", "group-i-intron", ("grp1", "group i intron", "group i introns", "intron_gpi"),
           ("RF00028", "Intron_gpI")),
    Family("group II intron", "group-ii-intron", ("grp2", "group ii intron", "group ii introns",
                                                   "intron_gpii"),
           ("RF00029", "Intron_gpII")),
    Family("telomerase RNA", "telomerase-rna", ("telomerase", "telomerase rna"),
           ("RF00024", "Telomerase-vert", "RF00025", "Telomerase-cil", "RF01050", "Sacc_telomerase")),
)

_BY_LABEL = {f.label: f for f in FAMILIES}
_BY_SLUG = {f.slug: f for f in FAMILIES}


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.strip().lower())


_ALIASES = {_key(a): f.label for f in FAMILIES for a in (f.label, *f.aliases)}
_RFAM = {name.lower(): f.label for f in FAMILIES for name in f.rfam}


def by_label(label: str) -> Family | None:
    """The canonical family with this exact label, or None."""
    return _BY_LABEL.get(label)


def by_slug(slug: str) -> Family | None:
    """The canonical family with this slug, or None."""
    return _BY_SLUG.get(slug)


def canonical_family(text: str | None) -> str:
    """The canonical label of a dataset's class or a paper's family name; ``""`` when it names none.

    >>> canonical_family("RNaseP"), canonical_family("5s"), canonical_family("group I intron")
    ('RNase P RNA', '5S rRNA', 'group I intron')
    """
    if not text:
        return ""
    return _ALIASES.get(_key(text), "")


def family_of_rfam(accession: str | None, family_id: str | None = None) -> str:
    """Canonical label of an Rfam assignment (by accession, else by model name), else ``"Rfam:<acc>"``.

    Local models without an accession are stored as ``TS_<name>`` (``ingest.rfam.library``); their name is
    looked up. ``""`` when neither is given (no family found).
    """
    for name in (accession, family_id, (accession or "").removeprefix("TS_")):
        if name and name.lower() in _RFAM:
            return _RFAM[name.lower()]
    if accession:
        return f"Rfam:{accession}"
    return f"Rfam:{family_id}" if family_id else ""


def family_slug(label: str) -> str:
    """URL form of any family label (canonical or ``Rfam:...``)."""
    family = _BY_LABEL.get(label)
    if family is not None:
        return family.slug
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
