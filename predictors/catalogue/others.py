"""Single-program methods without variants: seqfold, SQUARNA and HotKnots."""

from __future__ import annotations

from predictors.catalogue._factory import Program, dist_version
from predictors.core.spec import PredictorSpec

# Length limits from timings on this 2-core machine under a load of ~4 (wrappers run outside the sandbox
# on RNA STRAND sequences): seqfold 100 nt 0.9 s, 204 nt 1.7 s, 306 nt 3.8 s, 504 nt 21 s (about cubic);
# SQUARNA (default config by length, one thread) 100 nt 3.3 s, 204 nt 13 s, 306 nt > 200 s;
# HotKnots 100 nt 1.5 s, 204 nt 178 s, 306 nt > 200 s.
SEQFOLD_MAX_LENGTH, SEQFOLD_TIME_LIMIT = 800, 300.0
SQUARNA_MAX_LENGTH, SQUARNA_TIME_LIMIT = 250, 180.0
HOTKNOTS_MAX_LENGTH, HOTKNOTS_TIME_LIMIT = 200, 300.0

SEQFOLD = Program(
    program="predictors.programs.seqfold_fold (seqfold)",
    version=dist_version("seqfold"),
    citation="Zuker M, Stiegler P. Nucleic Acids Res 9:133-148 (1981); seqfold by J. Timmons",
    url="https://github.com/Lattice-Automation/seqfold",
    licence="MIT",
    training_data=("turner2004-melting", "turner2004-structure-fit"),
    module="seqfold_fold",
)
SQUARNA = Program(
    program="predictors.programs.squarna_fold (SQUARNA)",
    version=dist_version("SQUARNA"),
    citation="Serdakov MD, Bohdan DR, Nikolaev GI, Bujnicki JM, Baulin EF. Revisiting the base pair "
    "maximization approach for RNA secondary structure prediction with SQUARNA. bioRxiv (2026), "
    "doi:10.64898/2026.06.30.735492",
    url="https://github.com/febos/SQUARNA",
    licence="Apache-2.0",
    training_data=("squarna-configs",),
    module="squarna_fold",
)
HOTKNOTS = Program(
    program="predictors.programs.hotknots_fold (hotknots module, HotKnots 2.0)",
    version=dist_version("hotknots"),
    citation="Ren J, Rastegari B, Condon A, Hoos HH. HotKnots: heuristic prediction of RNA secondary "
    "structures including pseudoknots. RNA 11:1494-1504 (2005); Andronescu MS, Pop C, Condon AE. "
    "Improved free energy parameters for RNA pseudoknotted secondary structure prediction. RNA 16:26-42 "
    "(2010)",
    url="https://www.cs.ubc.ca/labs/algorithms/Projects/RNA-Params/",
    licence="GPL-3.0-or-later",
    training_data=("andronescu2010-dp09",),
    module="hotknots_fold",
)


def other_variants() -> tuple[PredictorSpec, ...]:
    return (
        SEQFOLD.variant(
            "seqfold",
            output_format="dot-bracket",
            max_length=SEQFOLD_MAX_LENGTH,
            time_limit_s=SEQFOLD_TIME_LIMIT,
            memory_limit_mb=2048,
            description="Zuker MFE folding in seqfold (Turner 2004 nearest-neighbour parameters).",
        ),
        SQUARNA.variant(
            "SQUARNA",
            output_format="dot-bracket",
            pseudoknots=True,
            max_length=SQUARNA_MAX_LENGTH,
            time_limit_s=SQUARNA_TIME_LIMIT,
            memory_limit_mb=4096,
            description="Top-ranked SQUARNA structure, default config by length, one thread.",
        ),
        HOTKNOTS.variant(
            "HotKnots",
            "--model",
            "DP",
            output_format="dot-bracket",
            pseudoknots=True,
            max_length=HOTKNOTS_MAX_LENGTH,
            time_limit_s=HOTKNOTS_TIME_LIMIT,
            memory_limit_mb=2048,
            description="HotKnots 2.0 with the DP09 pseudoknot energy model.",
        ),
    )
