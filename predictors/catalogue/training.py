"""Declared training data and parameter sources of the catalogue's methods (data for the leakage analysis).

A method benchmarked on RNAs it was fitted to looks better than it is. Each catalogue spec lists, in
``PredictorSpec.training_data``, the keys of the sources below, as the method's own paper states them.
``overlaps`` names the benchmark collections whose RNAs (or close homologues) may be in a source — the
input of the train/test leakage analysis; ``complete`` is False where the paper's statement is not a full
list of what was used, so that no method is reported leakage-free on an incomplete declaration.

Kinds: ``thermodynamic`` (optical melting of small duplexes and loops: no benchmark RNA can be in it),
``structures`` (parameters fitted to known secondary structures), ``probing`` (chemical mapping data),
``model`` (the input itself is a model built from a collection, e.g. an Rfam covariance model).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("thermodynamic", "structures", "probing", "model")
#: Benchmark collections a source can overlap (names as the datasets are called in CompaRNA).
COLLECTIONS = ("RNA STRAND", "PDB", "Rfam", "ArchiveII")


@dataclass(frozen=True)
class TrainingSource:
    """One declared source of a method's parameters."""

    key: str
    kind: str
    description: str
    citation: str
    overlaps: tuple[str, ...] = ()
    complete: bool = True
    #: Canonical families (comparna.rna.families) whose RNAs the source holds; ``("*",)``: every family
    #: (a collection drawn from Rfam or RNA STRAND without a published family list: any labelled target
    #: may have been seen); empty for melting data.
    families: tuple[str, ...] = ()
    #: CompaRNA datasets (slugs) the source contains: every sequence read from them counts as seen.
    datasets: tuple[str, ...] = ()
    #: Named training sets that are not available locally (no sequence-identity screen against them).
    unavailable: tuple[str, ...] = ()


_TURNER1999 = (
    "Mathews DH, Sabina J, Zuker M, Turner DH. Expanded sequence dependence of thermodynamic parameters "
    "improves prediction of RNA secondary structure. J Mol Biol 288:911-940 (1999)"
)
#: The families of the Mathews lab structure database used to fit Turner 1999/2004's non-melting terms.
_MATHEWS_DB = ("tRNA", "5S rRNA", "16S rRNA", "23S rRNA", "SRP RNA", "group I intron", "group II intron",
               "RNase P RNA")
#: RNA STRAND v2.0's classes (every canonical family but telomerase RNA).
_STRAND = ("tRNA", "5S rRNA", "16S rRNA", "23S rRNA", "SRP RNA", "tmRNA", "RNase P RNA", "group I intron",
           "group II intron")
ANY = ("*",)

_TURNER2004 = (
    "Mathews DH, Disney MD, Childs JL, Schroeder SJ, Zuker M, Turner DH. Incorporating chemical modification "
    "constraints into a dynamic programming algorithm for prediction of RNA secondary structure. PNAS "
    "101:7287-7292 (2004); Turner DH, Mathews DH. NNDB. Nucleic Acids Res 38:D280-D282 (2010)"
)

SOURCES: dict[str, TrainingSource] = {
    s.key: s
    for s in (
        TrainingSource(
            "turner1999-melting",
            "thermodynamic",
            "Turner 1999 nearest-neighbour free energies from optical melting experiments.",
            _TURNER1999,
        ),
        TrainingSource(
            "turner1999-structure-fit",
            "structures",
            "Turner 1999: parameters without melting data (multibranch-loop terms among them) chosen to "
            "maximise prediction accuracy on a database of known secondary structures (rRNAs, tRNAs, 5S "
            "rRNA, SRP RNA, group I and II introns, RNase P RNA).",
            _TURNER1999,
            overlaps=("RNA STRAND", "ArchiveII"),
            families=_MATHEWS_DB, unavailable=("Mathews et al. 1999 structure database",),
        ),
        TrainingSource(
            "turner2004-melting",
            "thermodynamic",
            "Turner 2004 nearest-neighbour free energies from optical melting experiments.",
            _TURNER2004,
        ),
        TrainingSource(
            "turner2004-structure-fit",
            "structures",
            "Turner 2004: multibranch-loop parameters optimised for prediction accuracy on a database of "
            "known secondary structures.",
            _TURNER2004,
            overlaps=("RNA STRAND", "ArchiveII"),
            families=_MATHEWS_DB, unavailable=("Mathews et al. 2004 structure database",),
        ),
        TrainingSource(
            "andronescu2007-rnastrand",
            "structures",
            "Turner 1999 model re-fitted by constraint generation to secondary structures from RNA STRAND "
            "together with optical melting data.",
            "Andronescu M, Condon A, Hoos HH, Mathews DH, Murphy KP. Efficient parameter estimation for RNA "
            "secondary structure prediction. Bioinformatics 23:i19-i28 (2007)",
            overlaps=("RNA STRAND", "PDB", "ArchiveII"),
            families=_STRAND, datasets=("rnastrand",),
        ),
        TrainingSource(
            "langdon2018-rnastrand",
            "structures",
            "Turner 2004 parameters changed by genetic improvement, with prediction accuracy on 4655 known "
            "secondary structures from RNA STRAND as the fitness.",
            "Langdon WB, Petke J, Lorenz R. Evolving better RNAfold structure prediction. EuroGP 2018, "
            "LNCS 10781:220-236 (2018)",
            overlaps=("RNA STRAND", "PDB", "ArchiveII"),
            families=_STRAND, datasets=("rnastrand",),
        ),
        TrainingSource(
            "andronescu2010-dp09",
            "structures",
            "HotKnots DP09 pseudoknot energy parameters fitted to RNA STRAND structures (pseudoknotted ones "
            "included) and thermodynamic data.",
            "Andronescu MS, Pop C, Condon AE. Improved free energy parameters for RNA pseudoknotted "
            "secondary structure prediction. RNA 16:26-42 (2010)",
            overlaps=("RNA STRAND", "PDB", "ArchiveII"),
            families=_STRAND, datasets=("rnastrand",),
        ),
        TrainingSource(
            "contrafold-rfam",
            "structures",
            "CONTRAfold conditional log-linear model trained on secondary structures from Rfam seed "
            "alignments (the S-151Rfam set of Dowell & Eddy 2004); the 2.0 parameter file is distributed "
            "with CONTRAfold without a separate statement of its training set.",
            "Do CB, Woods DA, Batzoglou S. CONTRAfold: RNA secondary structure prediction without "
            "physics-based models. Bioinformatics 22:e90-e98 (2006)",
            overlaps=("Rfam", "ArchiveII"),
            complete=False,
            families=ANY, unavailable=("S-151Rfam (Dowell & Eddy 2004)",),
        ),
        TrainingSource(
            "eternafold-multitask",
            "probing",
            "EternaFold: CONTRAfold model trained jointly on EternaBench chemical mapping and riboswitch "
            "affinity data of synthetic Eterna designs and on a set of natural secondary structures.",
            "Wayment-Steele HK et al. RNA secondary structure packages evaluated and improved by "
            "high-throughput experiments. Nat Methods 19:1234-1242 (2022)",
            overlaps=("RNA STRAND", "ArchiveII"),
            families=ANY, unavailable=("EternaBench", "EternaFold natural-structure set"),
        ),
        TrainingSource(
            "mxfold2-trainsetab",
            "structures",
            "MXfold2 model TrainSetAB: TrainSetA and TrainSetB of Rivas et al. 2012 (structures collected "
            "from RNA STRAND and other databases, and Rfam 10 seed structures).",
            "Sato K, Akiyama M, Sakakibara Y. RNA secondary structure prediction using deep learning with "
            "thermodynamic integration. Nat Commun 12:941 (2021); Rivas E, Lang R, Eddy SR. RNA "
            "18:193-212 (2012)",
            overlaps=("RNA STRAND", "Rfam", "ArchiveII"),
            families=ANY, unavailable=("TrainSetA", "TrainSetB (Rivas et al. 2012)"),
        ),
        TrainingSource(
            "efold-database",
            "probing",
            "eFold: the authors' chemical-probing structure database (1098 primary microRNAs, 1456 human "
            "mRNA regions) together with public structure databases named in the paper.",
            "de Lajarte AA et al. Diverse database and machine learning model to narrow the generalization "
            "gap in RNA structure prediction. Sci Adv (2026), doi:10.1126/sciadv.adz4967",
            overlaps=("RNA STRAND", "PDB", "ArchiveII"),
            complete=False,
            families=ANY, unavailable=("eFold database (de Lajarte et al.)",),
        ),
        TrainingSource(
            "squarna-configs",
            "structures",
            "SQUARNA has no fitted energy model; its default stem-scoring configurations were chosen by the "
            "authors on benchmark data sets described in the paper.",
            "Serdakov MD, Bohdan DR, Nikolaev GI, Bujnicki JM, Baulin EF. Revisiting the base pair "
            "maximization approach for RNA secondary structure prediction with SQUARNA. bioRxiv (2026), "
            "doi:10.64898/2026.06.30.735492",
            complete=False,
            families=ANY, unavailable=("SQUARNA configuration benchmark sets",),
        ),
        TrainingSource(
            "rfam-seed-model",
            "model",
            "The input is built from the target's Rfam family: its seed alignment and covariance model "
            "(consensus structure annotated by Rfam curators).",
            "Kalvari I et al. Rfam 14: expanded coverage of metagenomic, viral and microRNA families. "
            "Nucleic Acids Res 49:D192-D200 (2021)",
            overlaps=("Rfam",),
            families=ANY,
        ),
    )
}


def check_sources(keys: tuple[str, ...]) -> list[str]:
    """Problems of a catalogue spec's ``training_data``: unknown keys (empty list when all are known)."""
    return [f"unknown training-data source {k!r}" for k in keys if k not in SOURCES]
