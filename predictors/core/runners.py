"""Running predictors: the entry point (:func:`run_prediction`) and the choice of runner.

The pieces live beside this module: the job and result types (:mod:`predictors.core.job`), the limits and
cgroups (:mod:`predictors.core.limits`), the process runner (:mod:`predictors.core.process`), the
bubblewrap sandbox (:mod:`predictors.core.sandbox`), the container runners (:mod:`predictors.core.container`,
:mod:`predictors.core.owner_image`) and the web-service runner (:mod:`predictors.core.webservice`). Their
public names are re-exported here for callers that run predictions.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from predictors.core.container import ContainerRunner
from predictors.core.job import (
    JOB_MOUNT,
    MESSAGE_MAX_CHARS,
    PROGRAM_ROOT,
    REPO_ROOT,
    STATUSES,
    Job,
    Runner,
    RunResult,
    check_sequence,
    too_long_result,
)
from predictors.core.owner_image import OwnerImageRunner
from predictors.core.process import LocalRunner, ProcessRunner, decode_wrapped_returncode, format_argv
from predictors.core.sandbox import (
    ETC_ENTRIES,
    SANDBOX_GID,
    SANDBOX_PACKAGES,
    SANDBOX_UID,
    ExposureError,
    SandboxRunner,
    check_exposable,
    check_reachable,
    program_mounts,
)
from predictors.core.spec import PredictorSpec
from predictors.core.webservice import WebServiceRunner
from predictors.core.workspace import new_run_dir

__all__ = [
    "ETC_ENTRIES",
    "JOB_MOUNT",
    "MESSAGE_MAX_CHARS",
    "PROGRAM_ROOT",
    "REPO_ROOT",
    "SANDBOX_GID",
    "SANDBOX_PACKAGES",
    "SANDBOX_UID",
    "STATUSES",
    "ExposureError",
    "Job",
    "LocalRunner",
    "ProcessRunner",
    "RunResult",
    "Runner",
    "SandboxRunner",
    "check_exposable",
    "check_reachable",
    "decode_wrapped_returncode",
    "format_argv",
    "program_mounts",
    "run_prediction",
    "select_runner",
]


def select_runner(spec: PredictorSpec) -> Runner:
    """By the spec's kind: a web service, an owner's image, else the container runner when the spec names an
    image and an engine exists, else the sandbox."""
    if spec.kind == "web":
        return WebServiceRunner()
    if spec.kind == "image":
        return OwnerImageRunner()
    if spec.image and ContainerRunner.available():
        return ContainerRunner()
    return SandboxRunner()


def run_prediction(
    spec: PredictorSpec,
    sequence: str,
    *,
    runner: Runner | None = None,
    workdir: Path | None = None,
    name: str = "query",
    alignment: str | None = None,
) -> RunResult:
    """Run ``spec`` on one sequence and return its recorded outcome.

    Alignment methods also get ``alignment``, the Stockholm text of the query's homologue alignment whose
    query row is named ``name``; it is written to ``input.sto`` in the work dir.

    Too-long sequences are not run (status ``too_long``). The FASTA input is written to ``workdir``
    (when not given, the work dir of a fresh run directory under the jobs root, removed afterwards; a
    given one is left in place).

    Raises
    ------
    InvalidSpec
        When the spec is invalid (a configuration error, not an outcome).
    ValueError
        For an empty sequence, one with non-letter characters, or an alignment method.
    """
    spec.validate()
    if spec.input_kind == "alignment" and alignment is None:
        raise ValueError(f"{spec.name} reads an alignment; pass alignment=<Stockholm text>")
    seq = check_sequence(sequence)
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"sequence name {name!r} is empty or contains whitespace")
    runner = runner if runner is not None else select_runner(spec)
    if len(seq) > spec.max_length:
        return too_long_result(spec, runner.name, len(seq))
    rundir = None
    try:
        if workdir is None:
            rundir = new_run_dir()
            wd = rundir.work
        else:
            wd = Path(workdir)
            wd.mkdir(parents=True, exist_ok=True)
        (wd / "input.fa").write_text(f">{name}\n{seq}\n")
        if alignment is not None:
            (wd / "input.sto").write_text(alignment)
    except OSError as exc:
        if rundir is not None:
            rundir.remove()
        return RunResult(
            status="infrastructure_error",
            runner=runner.name,
            predictor=spec.name,
            fingerprint=spec.fingerprint(),
            message=f"cannot prepare work dir: {exc}",
        )
    try:
        job = Job(
            sequence=seq,
            workdir=wd,
            fasta="input.fa",
            alignment="input.sto" if alignment is not None else None,
            rundir=rundir,
        )
        result = runner.run(spec, job)
    finally:
        if rundir is not None:
            rundir.remove()
    return replace(result, limits={**result.limits, "max_length": spec.max_length})
