"""Running a program as a process: the shared machinery of every process-based runner.

:class:`ProcessRunner` applies the limits (:mod:`predictors.core.limits`), watches the wall clock, caps
the output and parses it; subclasses (:class:`LocalRunner`, the bubblewrap sandbox of
:mod:`predictors.core.sandbox`, the container runners) say how the argv is wrapped.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from comparna.rna.structure import StructureFormatError
from predictors.core.job import MESSAGE_MAX_CHARS, PROGRAM_ROOT, REPO_ROOT, Job, RunResult, bounded
from predictors.core.limits import (
    RunCgroups,
    effective_memory_mb,
    make_preexec,
    memory_ceiling_mb,
    reap_namespace,
    subreaper,
)
from predictors.core.memory_budget import reserve_memory
from predictors.core.parsers import parse_output
from predictors.core.spec import PredictorSpec
from predictors.core.venvs import venvs_dir
from predictors.core.workspace import OutputRejected, make_stager, new_run_dir, read_job_file, work_dir_full

STDERR_TAIL_BYTES = 4096
STDOUT_KEEP_BYTES = 64 * 1024
DEFAULT_OUTPUT_LIMIT_MB = 16
DEFAULT_MAX_PROCESSES = 64


@dataclass
class Execution:
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    runtime_s: float = 0.0
    output: bytes = b""
    output_missing: bool = False
    output_rejected: str | None = None
    stdout_size: int = 0
    stderr_tail: str = ""
    stdout_head: str = ""
    oom: bool = False
    #: The work dir's tmpfs was full when the run ended (the per-run quota, see workspace.new_run_dir).
    job_dir_full: bool = False
    limits: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    infrastructure_error: str | None = None


def decode_wrapped_returncode(rc: int) -> tuple[int | None, int | None]:
    """(exit code, signal) from a wrapper (bwrap, a container engine) that reports signal N as 128 + N."""
    if rc < 0:
        return None, -rc
    if rc > 128 and rc - 128 in {s.value for s in signal.Signals}:
        return None, rc - 128
    return rc, None


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _read_tail(path: Path, nbytes: int) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - nbytes))
        return f.read().decode("utf-8", errors="replace")


def _read_head(path: Path, nbytes: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(nbytes)


def sandbox_env(home: str, pythonpath: str = PROGRAM_ROOT) -> dict[str, str]:
    # A clean environment: nothing of the worker's (credentials, settings) leaks into a predictor.
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": pythonpath,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        # One thread per job: workers run jobs side by side, and thread pools would blow RLIMIT_AS.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLCONFIGDIR": "/tmp",
    }


def format_argv(
    spec: PredictorSpec, *, sequence: str, workdir: str, fasta: str, alignment: str | None, python: str
) -> list[str]:
    """Fill the placeholders of ``spec.argv``; paths are as the program sees them."""
    values = {
        "fasta": fasta,
        "sequence": sequence,
        "alignment": alignment if alignment is not None else "",
        "workdir": workdir,
        "python": python,
        "venvs": str(venvs_dir()),
    }
    return [element.format_map(values) for element in spec.argv]


class ProcessRunner:
    """Shared machinery: limits in the child, wall-clock watchdog, capped output, parsing."""

    name = "process"
    isolation = "none"
    uses_info_fd = False
    #: rlimits set in the child before exec (all of them unless a subclass limits another way).
    child_rlimits = frozenset(
        {
            resource.RLIMIT_CPU,
            resource.RLIMIT_AS,
            resource.RLIMIT_FSIZE,
            resource.RLIMIT_CORE,
            resource.RLIMIT_NPROC,
        }
    )

    def __init__(
        self,
        *,
        output_limit_mb: int = DEFAULT_OUTPUT_LIMIT_MB,
        max_processes: int = DEFAULT_MAX_PROCESSES,
        use_cgroups: bool = True,
    ):
        self.output_limit_mb = output_limit_mb
        self.max_processes = max_processes
        self.use_cgroups = use_cgroups

    # Subclasses say how the argv is wrapped and how paths look from inside. ``fds`` collects the file
    # descriptors the wrapped command must inherit (they are closed in the worker after the start).
    def _command(
        self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None, fds: list[int]
    ) -> list[str]:
        raise NotImplementedError

    def _mount(self, job: Job) -> str:
        raise NotImplementedError

    def _python(self) -> str:
        return sys.executable

    def _drop_to(self) -> tuple[int, int] | None:
        return None

    def _prepare(self, job: Job) -> None:  # noqa: B027 - optional hook
        pass

    def _stage(self, job: Job) -> list[tuple[Path, Path]]:
        """(host path, stage point) pairs to bind before the program starts (none by default)."""
        return []

    def run(self, spec: PredictorSpec, job: Job) -> RunResult:
        spec.validate()
        ex = self._execute(spec, job)
        return self._finish(spec, job, ex)

    def _execute(
        self,
        spec: PredictorSpec,
        job: Job,
        *,
        inner: list[str] | None = None,
        watch: Callable[[subprocess.Popen], bool] | None = None,
        cpu_s: int | None = None,
        read_output: bool = True,
    ) -> Execution:
        """Run the program once under the limits. A batch launch (:mod:`predictors.core.batch`) passes its
        own ``inner`` argv, a ``watch`` that waits for the process and says whether a time limit was
        exceeded, the CPU-time limit of the whole launch, and reads the outputs itself."""
        mount = self._mount(job)
        if inner is None:
            inner = format_argv(
                spec,
                sequence=job.sequence,
                workdir=mount,
                fasta=f"{mount}/{job.fasta}",
                alignment=f"{mount}/{job.alignment}" if job.alignment else None,
                python=self._python(),
            )
        ex = Execution()
        out_cap = self.output_limit_mb * 2**20
        cpu = int(spec.time_limit_s) + 2 if cpu_s is None else cpu_s
        mem_mb = effective_memory_mb(spec.memory_limit_mb)  # never above the host's memory (issue 26)
        mem = mem_mb * 2**20
        drop_to = self._drop_to()
        uid = drop_to[0] if drop_to else os.getuid()
        rlimits = [
            (resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_AS, (mem, mem)),
            (resource.RLIMIT_FSIZE, (out_cap, out_cap)),
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_NPROC, (self.max_processes, self.max_processes)),
        ]
        rlimits = [r for r in rlimits if r[0] in self.child_rlimits]
        fds: list[int] = []
        info_r = info_w = None
        cgroups = None
        own_rundir = job.rundir is None
        rundir = job.rundir
        budget = contextlib.ExitStack()
        try:
            # the host's memory budget (issue 36): held for the whole run, or refused (infrastructure error)
            budget.enter_context(reserve_memory(mem_mb))
            if rundir is None:
                rundir = new_run_dir()
            job = replace(job, rundir=rundir)
            # bubblewrap reports the host pid of the sandbox's init on this pipe (see reap_namespace).
            if self.uses_info_fd:
                info_r, info_w = os.pipe()
            self._prepare(job)
            job = replace(job, staged=tuple(self._stage(job)))
            argv = self._command(spec, job, inner, info_w, fds)
            cgroups = RunCgroups(self.max_processes, mem_mb) if self.use_cgroups else None
            if cgroups is not None and cgroups.pids_dir is not None:
                # RLIMIT_NPROC counts every process of the uid, i.e. of all runs side by side (and, on a
                # shared machine, of other checkouts): with a per-run pids cgroup it would only make
                # concurrent runs fail each other (EAGAIN at exec).
                rlimits = [r for r in rlimits if r[0] != resource.RLIMIT_NPROC]
            nproc_enforced = any(r[0] == resource.RLIMIT_NPROC for r in rlimits) and (
                (drop_to is not None and drop_to[0] != 0) or (drop_to is None and os.getuid() != 0)
            )
            ex.limits = {
                "runner": self.name,
                "isolation": self.isolation,
                "wall_s": spec.time_limit_s,
                "cpu_s": cpu,
                "address_space_mb": mem_mb,
                "memory_mb": mem_mb,
                "memory_ceiling_mb": memory_ceiling_mb(),
                "file_size_mb": self.output_limit_mb,
                "rlimit_nproc": self.max_processes if nproc_enforced else None,
                "cgroup_pids_max": self.max_processes if cgroups and cgroups.pids_dir else None,
                "cgroup_memory_mb": mem_mb if cgroups and cgroups.memory_dir else None,
                "cgroup_version": cgroups.version if cgroups and cgroups.dirs else None,
                "uid": uid,
                # The work dir's tmpfs (None: a plain directory, e.g. a worker that is not root).
                "job_dir_mb": rundir.quota_mb if Path(job.workdir) == rundir.work else None,
            }
            ex.limits.update(self._extra_limits(spec))
            stdout_path, stderr_path = rundir.stdout, rundir.stderr
            private = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with (
                os.fdopen(os.open(stdout_path, private, 0o600), "wb") as out_f,
                os.fdopen(os.open(stderr_path, private, 0o600), "wb") as err_f,
                subreaper() if self.uses_info_fd else contextlib.nullcontext(),
            ):
                start = time.monotonic()
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out_f,
                    stderr=err_f,
                    cwd=job.workdir,
                    env=self._env(job),
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=tuple(fds) + ((info_w,) if info_w is not None else ()),
                    preexec_fn=make_preexec(
                        rlimits,
                        cgroups.procs_files if cgroups else [],
                        drop_to,
                        make_stager(list(job.staged)) if job.staged else None,
                    ),
                )
                for fd in fds:
                    os.close(fd)
                fds = []
                try:
                    if watch is not None:
                        ex.timed_out = watch(proc)
                    else:
                        proc.wait(timeout=spec.time_limit_s)
                except subprocess.TimeoutExpired:
                    ex.timed_out = True
                finally:
                    # Also after a normal exit: background children must not outlive the run.
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    if info_w is not None:
                        os.close(info_w)
                        info_w = None
                    if cgroups is not None:
                        cgroups.kill_all()
                    proc.wait()
                    if info_r is not None:
                        reap_namespace(info_r)
                    self._cleanup(job)
                ex.runtime_s = time.monotonic() - start
            rc = proc.returncode
            ex.exit_code, ex.signal = self._decode_returncode(rc)
            ex.job_dir_full = ex.limits["job_dir_mb"] is not None and work_dir_full(job.workdir)
            if cgroups is not None:
                ex.oom = cgroups.oom_killed()
                ex.resources = cgroups.measurements()
            ex.stdout_size = stdout_path.stat().st_size
            ex.stderr_tail = _read_tail(stderr_path, STDERR_TAIL_BYTES)
            ex.stdout_head = _read_head(stdout_path, STDOUT_KEEP_BYTES).decode("utf-8", errors="replace")
            if not read_output:
                pass
            elif spec.output_file is None:
                ex.output = _read_head(stdout_path, out_cap)
            else:
                try:
                    content = read_job_file(job.workdir, spec.output_file, uid=uid, cap=out_cap)
                except OutputRejected as exc:
                    ex.output_rejected = str(exc)
                else:
                    ex.output_missing = content is None
                    ex.output = content or b""
        except (OSError, subprocess.SubprocessError) as exc:
            ex.infrastructure_error = f"{type(exc).__name__}: {exc}"
        finally:
            for fd in (info_r, info_w, *fds):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            if cgroups is not None:
                cgroups.close()
            if own_rundir and rundir is not None:
                rundir.remove()
            budget.close()
        return ex

    def _env(self, job: Job) -> dict[str, str]:
        return sandbox_env(self._mount(job))

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {}

    def _cleanup(self, job: Job) -> None:  # noqa: B027 - optional hook
        """Called after the process and its group were killed; e.g. remove a container."""

    def _decode_returncode(self, rc: int) -> tuple[int | None, int | None]:
        if rc < 0:
            return None, -rc
        return rc, None

    def _finish(self, spec: PredictorSpec, job: Job, ex: Execution) -> RunResult:
        base = RunResult(
            status="ok",
            runner=self.name,
            limits=ex.limits,
            exit_code=ex.exit_code,
            signal=signal_name(ex.signal) if ex.signal else None,
            stderr_tail=ex.stderr_tail,
            stdout=ex.stdout_head,
            runtime_s=round(ex.runtime_s, 4),
            resources=ex.resources,
            predictor=spec.name,
            fingerprint=spec.fingerprint(),
        )
        cap = self.output_limit_mb * 2**20
        if ex.infrastructure_error:
            return replace(base, status="infrastructure_error", message=ex.infrastructure_error)
        # An output flood first: it can also stall a container engine's client until the wall clock. Such
        # a client writes in chunks and stops just short of the cap, hence the 1 MB margin.
        if ex.signal == signal.SIGXFSZ or ex.stdout_size >= cap - min(2**20, cap // 2):
            return replace(
                base, status="failed", message=f"output exceeded the {self.output_limit_mb} MB limit"
            )
        if ex.job_dir_full:
            return replace(
                base,
                status="failed",
                message=f"disk quota exceeded: the job directory is limited to {ex.limits['job_dir_mb']} MB",
            )
        if ex.timed_out:
            return replace(
                base, status="timeout", message=f"wall-clock limit of {spec.time_limit_s:g} s exceeded"
            )
        if ex.signal in (signal.SIGXCPU,) or (
            ex.signal == signal.SIGKILL and not ex.oom and ex.runtime_s >= spec.time_limit_s
        ):
            return replace(
                base, status="timeout", message=f"CPU-time limit of {ex.limits['cpu_s']} s exceeded"
            )
        if ex.oom:
            return replace(
                base,
                status="failed",
                message=f"memory limit of {ex.limits.get('memory_mb', spec.memory_limit_mb)} MB exceeded "
                "(killed by the kernel)",
            )
        if ex.signal == signal.SIGKILL and self.isolation == "container":
            return replace(
                base,
                status="failed",
                message="killed by SIGKILL (likely the container memory limit, "
                f"{ex.limits.get('memory_mb', spec.memory_limit_mb)} MB)",
            )
        if ex.signal is not None:
            return replace(base, status="failed", message=f"killed by {signal_name(ex.signal)}")
        if ex.exit_code != 0:
            return replace(base, status="failed", message=f"exit status {ex.exit_code}")
        if ex.output_rejected:
            return replace(
                base,
                status="unparsable",
                message=f"output file {spec.output_file!r} was not read: {ex.output_rejected}",
            )
        if ex.output_missing:
            return replace(
                base, status="unparsable", message=f"output file {spec.output_file!r} was not written"
            )
        text = ex.output.decode("utf-8", errors="replace")
        try:
            parsed = parse_output(spec.output_format, text, job.sequence)
        except StructureFormatError as exc:
            # The parser quotes the output: bounded, like everything a program controls.
            return replace(
                base, status="unparsable", message=bounded(f"{spec.output_format}: {exc}", MESSAGE_MAX_CHARS)
            )
        return replace(base, structure=parsed.structure, probabilities=parsed.probabilities)


class LocalRunner(ProcessRunner):
    """UNSANDBOXED: a plain subprocess with the same rlimits, cgroups and timeout, but no isolation.

    The program sees the whole file system and the network and runs as the worker's user. Only for
    comparison and benchmarks of the sandbox's overhead, never for untrusted predictors.
    """

    name = "local-unsandboxed"
    isolation = "none"

    def _mount(self, job: Job) -> str:
        return str(job.workdir)

    def _env(self, job: Job) -> dict[str, str]:
        return sandbox_env(self._mount(job), pythonpath=str(REPO_ROOT))

    def _command(
        self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None, fds: list[int]
    ) -> list[str]:
        return inner

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {"network": "host", "filesystem": "host"}
