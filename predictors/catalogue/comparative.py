"""Comparative methods: each program on the two homologue inputs, ``NAME(seed)`` and ``NAME(20)``."""

from __future__ import annotations

import subprocess

from predictors.catalogue._factory import Program
from predictors.catalogue.vienna import VIENNA_LICENCE, VIENNA_URL, VIENNA_VERSION
from predictors.core.spec import PredictorSpec


def _infernal_version() -> str:
    """Version of the Infernal whose ``cmalign`` builds the alignments comparative methods read."""
    try:
        out = subprocess.run(["cmalign", "-h"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    for line in out.splitlines():
        if line.startswith("# INFERNAL"):
            return line.split()[2]
    return "unknown"


INFERNAL = _infernal_version()
_INPUT_TEXT = {
    "seed": "all sequences of the Rfam seed alignment plus the query",
    "20": "the query plus 19 seed sequences with 65-95 % identity to it, drawn at random with a recorded "
    "seed",
}
_COMMON = {
    "input_kind": "alignment",
    "output_format": "pairs-json",
    "max_length": 3000,
    "time_limit_s": 900,
    "memory_limit_mb": 6144,
}

ALIFOLD = Program(
    program="predictors.programs.alifold (ViennaRNA RNA module)",
    version=VIENNA_VERSION,
    citation="Bernhart SH, Hofacker IL, Will S, Gruber AR, Stadler PF. RNAalifold: improved consensus "
    "structure prediction for RNA alignments. BMC Bioinformatics 9:474 (2008)",
    url=VIENNA_URL,
    licence=VIENNA_LICENCE,
    training_data=("turner2004-melting", "turner2004-structure-fit"),
    command=("{python}", "-m", "predictors.programs.alifold", "{alignment}", "--query", "query"),
    defaults=_COMMON,
)
CMPROJECT = Program(
    program=f"predictors.programs.cmproject (Infernal cmalign {INFERNAL})",
    version=INFERNAL,
    citation="Nawrocki EP, Eddy SR. Infernal 1.1: 100-fold faster RNA homology searches. Bioinformatics "
    "29:2933 (2013)",
    url="http://eddylab.org/infernal/",
    licence="BSD-3-Clause (Infernal)",
    training_data=("rfam-seed-model",),
    command=("{python}", "-m", "predictors.programs.cmproject", "{alignment}", "--query", "query"),
    defaults=_COMMON,
)


def _both_inputs(program: Program, name: str, args: tuple[str, ...], description: str, **kw):
    return tuple(
        program.variant(
            f"{name}({kind})",
            argv=(*program.command, *args),
            comparative_input=kind,
            description=description + f" Input: {_INPUT_TEXT[kind]}, aligned by cmalign to the family model; "
            "the query's structure is the consensus projected through its alignment row.",
            **kw,
        )
        for kind in ("seed", "20")
    )


def comparative_variants() -> tuple[PredictorSpec, ...]:
    return (
        *_both_inputs(
            ALIFOLD,
            "RNAalifold",
            ("--mode", "mfe"),
            "Minimum free energy consensus structure of the alignment (RNAalifold defaults).",
        ),
        *_both_inputs(
            ALIFOLD,
            "RNAalifold-MEA",
            ("--mode", "mea"),
            "Maximum expected accuracy consensus structure from the alignment partition function.",
            produces_probabilities=True,
        ),
        *_both_inputs(
            ALIFOLD,
            "RNAalifold-centroid",
            ("--mode", "centroid"),
            "Centroid consensus structure from the alignment partition function.",
            produces_probabilities=True,
        ),
        *_both_inputs(
            CMPROJECT,
            "CM-projection",
            (),
            "The Rfam family's consensus structure (the covariance model's SS_cons) carried onto the query.",
        ),
    )
