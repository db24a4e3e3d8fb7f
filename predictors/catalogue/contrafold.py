"""CONTRAfold 2.0 model through gpu-contrafold's CPU engine: Viterbi and MEA (gamma 1 and 6)."""

from __future__ import annotations

from predictors.catalogue._factory import Program, dist_version
from predictors.core.spec import PredictorSpec

CONTRAFOLD = Program(
    program="predictors.programs.contrafold_fold (gpu-contrafold CPU engine, CONTRAfold 2.0 parameters)",
    version=dist_version("gpu-contrafold"),
    citation="Do CB, Woods DA, Batzoglou S. CONTRAfold: RNA secondary structure prediction without "
    "physics-based models. Bioinformatics 22:e90-e98 (2006); gpu-contrafold by H. Yu "
    "(https://github.com/atlasbioinfo/Contrafold_GPU)",
    url="http://contra.stanford.edu/contrafold/",
    licence="MIT (gpu-contrafold); CONTRAfold model and parameters: BSD",
    training_data=("contrafold-rfam",),
    module="contrafold_fold",
    # Numba needs ~300 MB; a missing machine-code cache costs ~30 s of compilation. Sandbox timings (load
    # ~6): Viterbi 1000 nt 3 s, 2000 nt 9 s; MEA (posteriors computed twice) 1000 nt 20 s, 2000 nt 126 s.
    defaults={
        "output_format": "pairs-json",
        "max_length": 2000,
        "time_limit_s": 600,
        "memory_limit_mb": 4096,
    },
)


#: The machine-code cache the install step builds (predictors/programs/contrafold_fold.py).
NUMBA_CACHE_ARGS = ("--numba-cache", "{venvs}/_data/numba-cache")


def contrafold_variants() -> tuple[PredictorSpec, ...]:
    specs = [
        CONTRAFOLD.variant(
            "CONTRAfold-MFE",
            *NUMBA_CACHE_ARGS,
            "--mode",
            "viterbi",
            description="Maximum-probability (Viterbi) structure of the CONTRAfold model, as `contrafold "
            "predict --viterbi`. CONTRAfold allows hairpins shorter than 3.",
        )
    ]
    for gamma in ("1", "6"):
        specs.append(
            CONTRAFOLD.variant(
                f"CONTRAfold-MEA-gamma{gamma}",
                *(*NUMBA_CACHE_ARGS, "--mode", "mea", "--gamma", gamma),
                produces_probabilities=True,
                description=f"Maximum expected accuracy structure, gamma = {gamma} "
                + (
                    "(CONTRAfold's default)"
                    if gamma == "6"
                    else "(sensitivity and specificity weighed equally)"
                )
                + ", from the CONTRAfold posteriors, as `contrafold predict --gamma`; pair probabilities >= "
                "0.001 stored.",
            )
        )
    specs.append(
        CONTRAFOLD.variant(
            "CONTRAfold-ThreshKnot",
            *(*NUMBA_CACHE_ARGS, "--mode", "threshknot", "--theta", "0.3"),
            cite="Zhang L, Zhang H, Mathews DH, Huang L. ThreshKnot: Thresholded ProbKnot for improved RNA "
            "secondary structure prediction. arXiv:1912.12796 (2019)",
            pseudoknots=True,
            produces_probabilities=True,
            description="ThreshKnot (theta = 0.3: pairs with posterior >= 0.3 whose bases are each other's "
            "most probable partners; may give pseudoknots) on the CONTRAfold posteriors; pair probabilities "
            ">= 0.001 stored.",
        )
    )
    return tuple(specs)
