"""ViennaRNA variants: RNAfold-style decoders (MFE, MEA, centroid) through our ``vienna_fold`` wrapper."""

from __future__ import annotations

from predictors.catalogue._factory import Program, dist_version
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
_DECODER_CITE = {
    "mfe": "Zuker M, Stiegler P. Nucleic Acids Res 9:133-148 (1981)",
    "mea": "Do CB, Woods DA, Batzoglou S. Bioinformatics 22:e90-e98 (2006)",
    "centroid": "Ding Y, Chan CY, Lawrence CE. RNA 11:1157-1166 (2005)",
}

RNAFOLD = Program(
    program="predictors.programs.vienna_fold (ViennaRNA RNA module)",
    version=VIENNA_VERSION,
    citation=VIENNA_CITE,
    url=VIENNA_URL,
    licence=VIENNA_LICENCE,
    training_data=("turner2004-melting", "turner2004-structure-fit"),
    module="vienna_fold",
    defaults={"max_length": 4000},
)


def rnafold_variants() -> tuple[PredictorSpec, ...]:
    """RNAfold-MFE, -MEA and -centroid with the default (Turner 2004) parameters."""
    return (
        RNAFOLD.variant(
            "RNAfold-MFE",
            "--mode",
            "mfe",
            cite=_DECODER_CITE["mfe"],
            output_format="dot-bracket",
            time_limit_s=300,
            memory_limit_mb=4096,
            description="Minimum free energy structure, Turner 2004 parameters (ViennaRNA defaults, -d2).",
        ),
        RNAFOLD.variant(
            "RNAfold-MEA",
            "--mode",
            "mea",
            "--gamma",
            "1.0",
            cite=_DECODER_CITE["mea"],
            output_format="pairs-json",
            time_limit_s=600,
            memory_limit_mb=6144,
            produces_probabilities=True,
            description="Maximum expected accuracy structure (gamma = 1) from the McCaskill partition "
            "function; pair probabilities >= 0.001 stored.",
        ),
        RNAFOLD.variant(
            "RNAfold-centroid",
            "--mode",
            "centroid",
            cite=_DECODER_CITE["centroid"],
            output_format="pairs-json",
            time_limit_s=600,
            memory_limit_mb=6144,
            produces_probabilities=True,
            description="Centroid of the Boltzmann ensemble (pairs with probability > 0.5); pair "
            "probabilities >= 0.001 stored.",
        ),
    )
