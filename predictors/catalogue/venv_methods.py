"""Methods that run in a virtualenv of their own (predictors/core/venvs.py): listed only where it exists."""

from __future__ import annotations

from predictors.catalogue._factory import NOT_INSTALLED, Program
from predictors.core.spec import PredictorSpec
from predictors.core.venvs import venv_python, venv_versions

# MXfold2 in the sandbox, one target per launch: 100 nt 3.8 s / 202 MB, 306 nt 6.9 s / 434 MB, 504 nt 15 s /
# 845 MB, 824 nt 43 s / 1993 MB (memory grows about quadratically, so 1000 nt needs about 3 GB). Warm
# (predictors/programs/mxfold2_fold.py, one thread) a target costs 50 nt 0.1 s, 100 nt 0.3 s, 300 nt 3.4 s,
# 500 nt 9.7 s after ~1.2 s to load the model once per launch.
MXFOLD2_MAX_LENGTH, MXFOLD2_TIME_LIMIT = 1000, 300.0


def _venv_program(name: str, dist: str, **fields) -> Program:
    """A program whose ``dist`` is installed in venv ``name`` (version "not-installed" otherwise)."""
    versions = venv_versions(name, dist, "torch")
    program = fields.pop("program")
    if "torch" in versions:
        program += f" (own virtualenv, torch {versions['torch']})"
    return Program(
        program=program,
        version=versions.get(dist.lower(), NOT_INSTALLED),
        python=venv_python(name, placeholder=True),
        **fields,
    )


MXFOLD2 = _venv_program(
    "mxfold2",
    "mxfold2",
    program="predictors.programs.mxfold2_fold (mxfold2 predict's model, loaded once)",
    citation="Sato K, Akiyama M, Sakakibara Y. RNA secondary structure prediction using deep learning with "
    "thermodynamic integration. Nat Commun 12:941 (2021)",
    url="https://github.com/mxfold/mxfold2",
    licence="MIT",
    training_data=("mxfold2-trainsetab", "turner2004-melting"),
    module="mxfold2_fold",
)


EFOLD = _venv_program(
    "efold",
    "efold",
    program="predictors.programs.efold_fold (efold.inference)",
    citation="de Lajarte AA, Martin des Taillades YJ, Aruda J, Bongrand P, Fuchs Wightman F, Salazar D, "
    "Allan MF, Kalicki C, L'Esperance-Kerckhoff C, Kashi A, Jossinet F, Rouskin S. Diverse database and "
    "machine learning model to narrow the generalization gap in RNA structure prediction. Sci Adv (2026), "
    "doi:10.1126/sciadv.adz4967",
    url="https://github.com/rouskinlab/efold",
    licence="MIT",
    training_data=("efold-database",),
    module="efold_fold",
)
# eFold in process, under torch.no_grad() (predictors/programs/efold_fold.py), one thread: 100 nt 0.3 s /
# 0.5 GB, 300 nt 2.3 s / 0.75 GB, 600 nt 11 s / 1.1 GB, 1000 nt 32 s / 1.8 GB (plus ~4 s to load the model
# once per launch). Its post-processing grows about quadratically in memory and cubically in time.
EFOLD_MAX_LENGTH, EFOLD_TIME_LIMIT = 1000, 300.0


def venv_variants() -> tuple[PredictorSpec, ...]:
    specs = []
    if MXFOLD2.installed:
        specs.append(
            MXFOLD2.variant(
                "MXfold2",
                output_format="dot-bracket",
                max_length=MXFOLD2_MAX_LENGTH,
                time_limit_s=MXFOLD2_TIME_LIMIT,
                memory_limit_mb=6144,
                description="Deep-learning folding scores integrated with Turner free energies (model "
                "TrainSetAB shipped in the wheel), Zuker-style decoding; CPU.",
            )
        )
    if EFOLD.installed:
        specs.append(
            EFOLD.variant(
                "eFold",
                output_format="pairs-json",
                pseudoknots=True,
                max_length=EFOLD_MAX_LENGTH,
                time_limit_s=EFOLD_TIME_LIMIT,
                memory_limit_mb=4096,
                description="Deep-learning pair scores (Evoformer-inspired model, weights shipped in the "
                "wheel) post-processed into base pairs, pseudoknots included; CPU, one thread.",
            )
        )
    return tuple(specs)
