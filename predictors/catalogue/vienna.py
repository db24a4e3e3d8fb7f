"""ViennaRNA variants: RNAfold-style decoders (MFE, MEA, centroid) through our ``vienna_fold`` wrapper."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from predictors.catalogue._factory import NOT_INSTALLED, Program, dist_version, join_citations
from predictors.core.spec import PredictorSpec

VIENNA_VERSION = dist_version("ViennaRNA")
VIENNA_CITE = (
    "Lorenz R, Bernhart SH, Höner zu Siederdissen C, Tafer H, Flamm C, Stadler PF, Hofacker IL. "
    "ViennaRNA Package 2.0. Algorithms Mol Biol 6:26 (2011)"
)
VIENNA_URL = "https://www.tbi.univie.ac.at/RNA/"
VIENNA_LICENCE = (
    "ViennaRNA licence: research, educational and commercial use and modification, no redistribution for a "
    "fee, credit to the authors"
)

RNAFOLD = Program(
    program="predictors.programs.vienna_fold (ViennaRNA RNA module)",
    version=VIENNA_VERSION,
    citation=VIENNA_CITE,
    url=VIENNA_URL,
    licence=VIENNA_LICENCE,
    module="vienna_fold",
    defaults={"max_length": 4000},
)


@dataclass(frozen=True)
class ParameterSet:
    """One energy parameter file compiled into ViennaRNA (``vienna_fold --params <key>``)."""

    key: str
    label: str  # in spec names, e.g. RNAfold-Turner1999-MFE; "" for the default set
    text: str  # in descriptions
    citation: str
    training: tuple[str, ...]


PARAMETER_SETS = (
    ParameterSet(
        "turner2004",
        "",
        "Turner 2004 parameters (ViennaRNA defaults, -d2)",
        "Mathews DH et al. PNAS 101:7287-7292 (2004)",
        ("turner2004-melting", "turner2004-structure-fit"),
    ),
    ParameterSet(
        "turner1999",
        "Turner1999",
        "Turner 1999 parameters (rna_turner1999.par, -d2)",
        "Mathews DH, Sabina J, Zuker M, Turner DH. J Mol Biol 288:911-940 (1999)",
        ("turner1999-melting", "turner1999-structure-fit"),
    ),
    ParameterSet(
        "andronescu2007",
        "Andronescu2007",
        "Andronescu 2007 parameters (rna_andronescu2007.par, -d2)",
        "Andronescu M, Condon A, Hoos HH, Mathews DH, Murphy KP. Bioinformatics 23:i19-i28 (2007)",
        ("andronescu2007-rnastrand", "turner1999-melting"),
    ),
    ParameterSet(
        "langdon2018",
        "Langdon2018",
        "Langdon 2018 parameters (rna_langdon2018.par, -d2)",
        "Langdon WB, Petke J, Lorenz R. EuroGP 2018, LNCS 10781:220-236 (2018)",
        ("langdon2018-rnastrand", "turner2004-melting", "turner2004-structure-fit"),
    ),
)
SFOLD_SAMPLES, SFOLD_SEED = "1000", "20051157"
_SFOLD_CITE = (
    "Ding Y, Lawrence CE. A statistical sampling algorithm for RNA secondary structure prediction. Nucleic "
    "Acids Res 31:7280-7301 (2003); Ding Y, Chan CY, Lawrence CE. RNA 11:1157-1166 (2005); Chan CY, "
    "Lawrence CE, Ding Y. Bioinformatics 21:3926-3928 (2005)"
)


def _name(prefix: str, pset: ParameterSet, suffix: str = "") -> str:
    return "-".join(part for part in (prefix, pset.label, suffix) if part)


@dataclass(frozen=True)
class Decoder:
    """How a structure is read from the energy model (``vienna_fold --mode``)."""

    suffix: str  # in spec names
    args: tuple[str, ...]
    citation: str
    description: str  # "{params}" is replaced by the parameter set's text
    fields: dict
    default_set_only: bool = False


_WITH_PROBABILITIES = {
    "output_format": "pairs-json",
    "time_limit_s": 600,
    "memory_limit_mb": 6144,
    "produces_probabilities": True,
}
DECODERS = (
    Decoder(
        "MFE",
        ("--mode", "mfe"),
        "Zuker M, Stiegler P. Nucleic Acids Res 9:133-148 (1981)",
        "Minimum free energy structure, {params}.",
        {"output_format": "dot-bracket", "time_limit_s": 300, "memory_limit_mb": 4096},
    ),
    Decoder(
        "MEA",
        ("--mode", "mea", "--gamma", "1.0"),
        "Do CB, Woods DA, Batzoglou S. Bioinformatics 22:e90-e98 (2006)",
        "Maximum expected accuracy structure (gamma = 1) from the McCaskill partition function, {params}; "
        "pair probabilities >= 0.001 stored.",
        _WITH_PROBABILITIES,
    ),
    Decoder(
        "centroid",
        ("--mode", "centroid"),
        "Ding Y, Chan CY, Lawrence CE. RNA 11:1157-1166 (2005)",
        "Centroid of the Boltzmann ensemble (pairs with probability > 0.5), {params}; pair probabilities "
        ">= 0.001 stored.",
        _WITH_PROBABILITIES,
    ),
    Decoder(
        "ThreshKnot",
        ("--mode", "threshknot", "--theta", "0.3"),
        "Zhang L, Zhang H, Mathews DH, Huang L. ThreshKnot: Thresholded ProbKnot for improved RNA secondary "
        "structure prediction. arXiv:1912.12796 (2019)",
        "ThreshKnot (theta = 0.3: pairs with probability >= 0.3 whose bases are each other's most probable "
        "partners; may give pseudoknots) on the exact McCaskill pair probabilities, {params}; pair "
        "probabilities >= 0.001 stored.",
        {**_WITH_PROBABILITIES, "pseudoknots": True},
        default_set_only=True,
    ),
)


def rnafold_variants() -> tuple[PredictorSpec, ...]:
    """RNAfold-[SET-]MFE, -MEA and -centroid on every parameter set, RNAfold-ThreshKnot on the default one.

    The default set keeps the names and commands it always had (no ``--params``), so its method versions
    do not change.
    """
    return tuple(
        RNAFOLD.variant(
            _name("RNAfold", pset, decoder.suffix),
            *decoder.args,
            *(() if pset.key == "turner2004" else ("--params", pset.key)),
            cite=join_citations(decoder.citation, pset.citation),
            training=pset.training,
            description=decoder.description.format(params=pset.text),
            **decoder.fields,
        )
        for pset in PARAMETER_SETS
        for decoder in DECODERS
        if pset.key == "turner2004" or not decoder.default_set_only
    )


def sampling_variants() -> tuple[PredictorSpec, ...]:
    """Sfold's procedure (sample, cluster, centroid of the largest cluster) on every parameter set.

    Sandbox timings (load ~6): 1000 nt 6 s, 2000 nt 49 s (about cubic), hence 2000 nt at most.
    """
    return tuple(
        RNAFOLD.variant(
            _name("Sfold-style-sampling", pset),
            *("--mode", "sfold", "--samples", SFOLD_SAMPLES, "--seed", SFOLD_SEED, "--params", pset.key),
            cite=join_citations(_SFOLD_CITE, pset.citation),
            training=pset.training,
            output_format="pairs-json",
            max_length=2000,
            time_limit_s=600,
            memory_limit_mb=6144,
            produces_probabilities=True,
            description=f"Sfold's procedure with ViennaRNA: {SFOLD_SAMPLES} structures sampled from the "
            f"Boltzmann ensemble ({pset.text}, fixed seed {SFOLD_SEED}), Ward clustering on base-pair "
            "distance with the number of clusters (<= 20) chosen by the Calinski-Harabasz index; the "
            "prediction is the centroid of the most populated cluster. The stored probabilities are the "
            "sample's pair frequencies. A re-implementation of the published procedure, not Sfold itself.",
        )
        for pset in PARAMETER_SETS
    )


def _rnapkplex_version() -> str:
    """Version of Debian's RNAPKplex (package vienna-rna, non-free), or "not-installed"."""
    if shutil.which("RNAPKplex") is None:
        return NOT_INSTALLED
    try:
        out = subprocess.run(["RNAPKplex", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return NOT_INSTALLED
    return out.split()[-1] if out.split() else NOT_INSTALLED


RNAPKPLEX = Program(
    program="predictors.programs.rnapkplex_fold (RNAPKplex of Debian's vienna-rna, non-free)",
    version=_rnapkplex_version(),
    citation=join_citations(
        VIENNA_CITE,
        "Bernhart SH, Hofacker IL, Stadler PF. Local RNA base pairing probabilities in large sequences. "
        "Bioinformatics 22:614-615 (2006)",
        "Tafer H, Hofacker IL. RNAplex: a fast tool for RNA-RNA interaction search. Bioinformatics "
        "24:2657-2663 (2008)",
    ),
    url=VIENNA_URL,
    licence=VIENNA_LICENCE + " (Debian non-free)",
    training_data=("turner2004-melting", "turner2004-structure-fit"),
    module="rnapkplex_fold",
)


def rnapkplex_variants() -> tuple[PredictorSpec, ...]:
    """RNAPKplex with its defaults (Turner 2004, pseudoknot initiation cost -8.10 kcal/mol).

    Sandbox timings (load ~6): 1000 nt 77 s, 2000 nt more than 600 s, hence 1000 nt at most.
    """
    return (
        RNAPKPLEX.variant(
            "RNAPKplex",
            output_format="dot-bracket",
            pseudoknots=True,
            max_length=1000,
            time_limit_s=600,
            memory_limit_mb=4096,
            description="MFE structure plus at most one pseudoknot interaction between two accessible "
            "intervals (RNAplfold accessibility + RNAplex interaction energy), kept when it gains more than "
            "the default initiation cost of 8.10 kcal/mol; Turner 2004 parameters of ViennaRNA 2.5.1.",
        ),
    )
