"""Batched launches: many targets of one spec in one sandbox launch, each with its own exact outcome.

A spec that declares ``batch`` (only CompaRNA's own wrappers can, see :class:`PredictorSpec`) runs a
multi-FASTA in one launch: the batch entry of :mod:`predictors.programs._common` imports the wrapper once
and calls its ``main`` per target, each with its own input, output, stderr and current directory, and
reports progress in a file of the work dir (``start k`` / ``end k status seconds``). The worker watches that
file, so every target still ends in exactly one status of :data:`STATUSES`, decided by the same code as a
single run (:meth:`ProcessRunner._finish`):

- a target's runtime is measured inside the batch, around its ``main`` alone;
- a target that runs past the spec's wall-clock limit is ``timeout``: the launch is killed (every process
  of it) and the targets not yet started run in a new launch;
- a target that crashes the process (a signal, the memory limit, an output flood, ``os._exit``) is
  ``failed`` with that reason, and the rest run in a new launch; an exception other than ``SystemExit``
  ends the launch after its target too (the program's state is suspect);
- too-long sequences are not run (``too_long``), as in :func:`predictors.core.runners.run_prediction`;
- after ``stop_after_s`` no new target starts: the batch returns the targets not started (``unstarted``),
  so a batch holds a worker for a bounded time whatever the estimates said.

The limits of a launch are those of a single run (address space, cgroups, processes, file size, no
network), applied to the whole launch; only the CPU-time limit covers the launch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from predictors.core.job import Job, RunResult, check_sequence, too_long_result
from predictors.core.process import (
    STDERR_TAIL_BYTES,
    STDOUT_KEEP_BYTES,
    Execution,
    LocalRunner,
    ProcessRunner,
    format_argv,
)
from predictors.core.runners import run_prediction
from predictors.core.sandbox import SandboxRunner
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import OutputRejected, RunDir, new_run_dir, read_job_file

#: The module whose ``__main__`` runs a wrapper over a multi-FASTA (see ``batch_main`` there).
BATCH_ENTRY = "predictors.programs._common"
#: Per-target capture files, in the target's directory ``t<k>/`` (as named by the batch entry).
TARGET_STDOUT = ".comparna-stdout"
TARGET_STDERR = ".comparna-stderr"
TARGETS_FASTA = "targets.fa"
PROGRESS_FILE = "progress"
PROGRESS_CAP = 1 << 20
#: How often the worker looks at the progress file while a launch runs.
POLL_S = 0.05


@dataclass(frozen=True)
class BatchItem:
    """One target of a batch: its sequence and the name of its FASTA record."""

    sequence: str
    name: str = "query"


@dataclass
class BatchOutcome:
    """``results[i]`` for every item ``i`` that ended (exactly once each); ``unstarted`` the items left
    when the batch stopped at its time budget (never run: queue them again)."""

    results: dict[int, RunResult] = field(default_factory=dict)
    unstarted: list[int] = field(default_factory=list)
    launches: int = 0


@dataclass
class Progress:
    """What the batch entry reported: targets started, ended (status, seconds), and how it stopped."""

    started: list[int] = field(default_factory=list)
    ended: dict[int, tuple[int, float]] = field(default_factory=dict)
    stopped: bool = False

    @property
    def current(self) -> int | None:
        """The target started and not ended (the one a crash or hang belongs to), if any."""
        open_ = [k for k in self.started if k not in self.ended]
        return open_[-1] if open_ else None


def parse_progress(text: str, n: int) -> Progress:
    """Read the progress file strictly: lines that do not parse, or name a target outside 0..n-1, are
    ignored (the file is written inside the sandbox)."""
    out = Progress()
    for line in text.splitlines():
        words = line.split()
        try:
            if words == ["stop"]:
                out.stopped = True
            elif len(words) == 2 and words[0] == "start" and 0 <= int(words[1]) < n:
                out.started.append(int(words[1]))
            elif len(words) == 4 and words[0] == "end" and 0 <= int(words[1]) < n:
                seconds = float(words[3])
                if not 0 <= seconds < 1e7:
                    continue
                out.ended[int(words[1])] = (int(words[2]), seconds)
        except ValueError:
            continue
    return out


def can_batch(spec: PredictorSpec, runner: object) -> bool:
    """Whether ``spec`` may run many targets in one launch of ``runner`` (the sandbox or the plain one)."""
    return bool(spec.batch) and isinstance(runner, SandboxRunner | LocalRunner) and not spec.problems()


def run_batch(
    spec: PredictorSpec,
    items: Sequence[BatchItem],
    *,
    runner: ProcessRunner | None = None,
    stop_after_s: float = 60.0,
    on_results: Callable[[dict[int, RunResult]], None] | None = None,
) -> BatchOutcome:
    """Run ``spec`` on every item, as few launches as the targets' behaviour allows.

    ``on_results`` is called with the results of each launch as soon as they are known (e.g. to store
    them). A spec that cannot batch runs one launch per item. Items left when ``stop_after_s`` have
    passed are returned in ``unstarted``.

    Raises
    ------
    InvalidSpec
        When the spec is invalid.
    ValueError
        For an empty sequence or one with non-letter characters, or an alignment method.
    """
    spec.validate()
    if spec.input_kind == "alignment":
        raise ValueError(f"{spec.name} reads an alignment; batches are for single sequences")
    runner = runner if runner is not None else SandboxRunner()
    seqs = [check_sequence(item.sequence) for item in items]
    outcome = BatchOutcome()

    def emit(results: dict[int, RunResult]) -> None:
        outcome.results.update(results)
        if on_results is not None and results:
            on_results(results)

    limit = spec.max_length
    emit({i: too_long_result(spec, runner.name, len(s)) for i, s in enumerate(seqs) if len(s) > limit})
    pending = [i for i, s in enumerate(seqs) if len(s) <= spec.max_length]
    began = time.monotonic()
    batchable = can_batch(spec, runner)
    while pending:
        left = stop_after_s - (time.monotonic() - began)
        if outcome.launches and left <= 0:
            outcome.unstarted = pending
            break
        outcome.launches += 1
        if not batchable or len(pending) == 1:
            i = pending.pop(0)
            emit({i: run_prediction(spec, seqs[i], runner=runner, name=items[i].name)})
            continue
        launch = [(i, seqs[i], items[i].name) for i in pending]
        results, rest, stopped = _launch(spec, runner, launch, max(left, 0.0))
        emit(results)
        if stopped:
            outcome.unstarted = rest
            break
        pending = rest
    return outcome


def _launch(
    spec: PredictorSpec, runner: ProcessRunner, launch: list[tuple[int, str, str]], stop_after_s: float
) -> tuple[dict[int, RunResult], list[int], bool]:
    """One launch over ``launch`` ((item, sequence, name) each): (results, items not run, stopped)."""
    try:
        rundir = new_run_dir()
        (rundir.work / TARGETS_FASTA).write_text("".join(f">{name}\n{seq}\n" for _, seq, name in launch))
    except OSError as exc:
        base = RunResult(
            status="infrastructure_error",
            runner=runner.name,
            predictor=spec.name,
            fingerprint=spec.fingerprint(),
            message=f"cannot prepare work dir: {exc}",
        )
        return {i: base for i, _, _ in launch}, [], False
    try:
        return _run_launch(spec, runner, launch, stop_after_s, rundir)
    finally:
        rundir.remove()


def _run_launch(
    spec: PredictorSpec,
    runner: ProcessRunner,
    launch: list[tuple[int, str, str]],
    stop_after_s: float,
    rundir: RunDir,
) -> tuple[dict[int, RunResult], list[int], bool]:
    n = len(launch)
    wd = rundir.work
    job = Job(sequence=launch[0][1], workdir=wd, fasta=TARGETS_FASTA, rundir=rundir)
    mount = runner._mount(job)
    inner = format_argv(
        spec,
        sequence=launch[0][1],
        workdir=mount,
        fasta=f"{mount}/{TARGETS_FASTA}",
        alignment=None,
        python=runner._python(),
    )
    argv = [
        inner[0],
        "-m",
        BATCH_ENTRY,
        "--batch",
        f"{mount}/{TARGETS_FASTA}",
        "--progress",
        f"{mount}/{PROGRESS_FILE}",
        "--stop-after-s",
        f"{stop_after_s:.3f}",
        "--",
        *inner[2:],
    ]
    drop = runner._drop_to()
    uid = drop[0] if drop else os.getuid()
    out_cap = runner.output_limit_mb * 2**20
    watched: dict[str, Any] = {"target": None, "runtime_s": 0.0}

    def read_progress() -> Progress:
        try:
            data = read_job_file(wd, PROGRESS_FILE, uid=uid, cap=PROGRESS_CAP)
        except OutputRejected:
            data = None
        return parse_progress((data or b"").decode("ascii", errors="replace"), n)

    def watch(proc) -> bool:
        # The wall-clock limit is per target: from the moment a target is seen to start (or the launch,
        # for the import before the first one). True when the limit was exceeded.
        current, since = None, time.monotonic()
        while True:
            try:
                proc.wait(timeout=POLL_S)
                return False
            except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: look at the progress
                pass
            now = time.monotonic()
            seen = read_progress().current
            if seen != current:
                current, since = seen, now
            watched["target"], watched["runtime_s"] = current, now - since
            if now - since > spec.time_limit_s:
                return True

    cpu_s = int(stop_after_s + 2 * spec.time_limit_s) + 2
    ex = runner._execute(spec, job, inner=argv, watch=watch, cpu_s=cpu_s, read_output=False)
    limits = {**ex.limits, "wall_s": spec.time_limit_s, "max_length": spec.max_length, "batch_size": n}
    if ex.infrastructure_error:
        base = runner._finish(spec, job, replace(ex, limits=limits))
        return {i: base for i, _, _ in launch}, [], False
    progress = read_progress()
    results: dict[int, RunResult] = {}
    for k, (status, seconds) in progress.ended.items():
        one = _target_execution(wd, k, spec, uid, out_cap)
        one.exit_code, one.runtime_s, one.limits, one.resources = status, seconds, limits, ex.resources
        results[launch[k][0]] = runner._finish(spec, replace(job, sequence=launch[k][1]), one)
    # The target a crash or a hang belongs to: the one open when the launch ended (or, if it died before
    # starting any, the first one not ended: e.g. the wrapper cannot even be imported).
    culprit = progress.current
    if culprit is None and ex.timed_out:
        culprit = watched["target"]
    if culprit is None and not progress.started and not progress.stopped:
        culprit = 0
    if culprit is not None and culprit not in progress.ended:
        if culprit in progress.started:
            one = _target_execution(wd, culprit, spec, uid, out_cap)
        else:  # died before its first target: what the launch printed tells why
            one = Execution(stderr_tail=_tail(rundir.stderr))
        one.exit_code, one.signal, one.timed_out, one.oom = ex.exit_code, ex.signal, ex.timed_out, ex.oom
        one.job_dir_full = ex.job_dir_full
        one.limits, one.resources = limits, ex.resources
        one.runtime_s = watched["runtime_s"] if watched["target"] == culprit else ex.runtime_s
        results[launch[culprit][0]] = runner._finish(spec, replace(job, sequence=launch[culprit][1]), one)
    rest = [launch[k][0] for k in range(n) if k not in progress.ended and k != culprit]
    return results, rest, progress.stopped


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _target_execution(wd: Path, k: int, spec: PredictorSpec, uid: int, cap: int) -> Execution:
    """What target ``k`` left in its directory: stdout (size and head), stderr tail, its output."""
    one = Execution()
    d = f"t{k}"
    try:
        stdout = read_job_file(wd, f"{d}/{TARGET_STDOUT}", uid=uid, cap=cap + 1) or b""
    except OutputRejected as exc:
        stdout, one.output_rejected = b"", str(exc)
    one.stdout_size = len(stdout)
    one.stdout_head = stdout[:STDOUT_KEEP_BYTES].decode("utf-8", errors="replace")
    try:
        stderr = read_job_file(wd, f"{d}/{TARGET_STDERR}", uid=uid, cap=cap + 1) or b""
    except OutputRejected:
        stderr = b""
    one.stderr_tail = stderr[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace")
    if spec.output_file is None:
        one.output = stdout[:cap]
    else:
        try:
            content = read_job_file(wd, f"{d}/{spec.output_file}", uid=uid, cap=cap)
        except OutputRejected as exc:
            one.output_rejected = str(exc)
        else:
            one.output_missing = content is None
            one.output = content or b""
    return one
