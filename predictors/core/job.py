"""What a run is: the job handed to a runner, the recorded result, and the :class:`Runner` protocol.

Every run ends in exactly one status of :data:`STATUSES`. A predictor's misbehaviour (a crash, an endless
loop, a memory or fork bomb, a flood of output) is contained by the limits of
:mod:`predictors.core.limits` and recorded as ``failed`` or ``timeout``; only a problem of our own
infrastructure (bubblewrap or the container engine missing, a temporary directory that cannot be made) is
``infrastructure_error``, the one status worth retrying.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from comparna.rna.structure import Structure
from predictors.core.parsers import Probabilities
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import RunDir

# "awaiting": a web service accepted the job; its structure arrives later by upload (issue 17).
STATUSES = ("ok", "failed", "timeout", "too_long", "unparsable", "infrastructure_error", "awaiting")

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Longest message stored with a run (parser messages quote the program's output).
MESSAGE_MAX_CHARS = 1000
#: Where the work directory appears inside the sandbox and the container.
JOB_MOUNT = "/job"
#: Where the wrapper packages appear inside the sandbox and the container (the programs' PYTHONPATH).
PROGRAM_ROOT = "/opt/comparna"


@dataclass(frozen=True)
class Job:
    """One prediction to run: the input files are already in ``workdir``.

    Parameters
    ----------
    sequence : str
        The target sequence (the prediction is parsed against its length).
    workdir : Path
        Host directory holding the inputs; the program's writable current directory.
    fasta : str
        File name (in ``workdir``) of the FASTA input.
    alignment : str or None
        File name (in ``workdir``) of the alignment input, for alignment methods.
    rundir : RunDir or None
        The run directory holding ``workdir`` and the captured stdout/stderr; the runner makes (and
        removes) one of its own when None.
    staged : tuple of (Path, Path)
        Set by the runner: host directories bound onto stage points of the run directory before the
        sandbox starts (see :func:`predictors.core.workspace.make_stager`).
    """

    sequence: str
    workdir: Path
    fasta: str = "input.fa"
    alignment: str | None = None
    rundir: RunDir | None = None
    staged: tuple[tuple[Path, Path], ...] = ()


@dataclass(frozen=True)
class RunResult:
    """The recorded outcome of one run.

    ``limits`` holds the runner's name for each limit and the value applied (None when a mechanism was
    unavailable); ``resources`` what was measured (peak memory, peak number of processes).
    """

    status: str
    runner: str
    limits: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    signal: str | None = None
    message: str = ""
    stderr_tail: str = ""
    stdout: str = ""
    runtime_s: float = 0.0
    structure: Structure | None = None
    probabilities: Probabilities | None = None
    resources: dict[str, Any] = field(default_factory=dict)
    predictor: str = ""
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown run status {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Runner(Protocol):
    """Runs a validated spec on a prepared job; never raises for a predictor's misbehaviour."""

    name: str

    def run(self, spec: PredictorSpec, job: Job) -> RunResult: ...


def bounded(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters, saying how much was left out."""
    return text if len(text) <= n else text[: n - 20] + f" ... [{len(text) - n + 20} more characters]"


def check_sequence(sequence: str) -> str:
    """The sequence without whitespace; ``ValueError`` when empty or holding anything but letters."""
    seq = "".join(sequence.split())
    if not seq:
        raise ValueError("empty sequence")
    # Letters only: the sequence may be an argv element, and must never look like an option or a path.
    if not seq.isascii() or not seq.isalpha():
        bad = next(c for c in seq if not (c.isascii() and c.isalpha()))
        raise ValueError(f"sequence contains {bad!r}; only letters are allowed")
    return seq


def too_long_result(spec: PredictorSpec, runner_name: str, length: int) -> RunResult:
    return RunResult(
        status="too_long",
        runner=runner_name,
        predictor=spec.name,
        fingerprint=spec.fingerprint(),
        limits={"max_length": spec.max_length},
        message=f"sequence length {length} exceeds the limit of {spec.max_length}",
    )
