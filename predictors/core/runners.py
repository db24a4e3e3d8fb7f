"""Running predictors: one :class:`Runner` protocol, a bubblewrap sandbox, a container and a plain runner.

Every run ends in exactly one status of :data:`STATUSES`. A predictor's misbehaviour (a crash, an endless
loop, a memory or fork bomb, a flood of output) is contained by the limits below and recorded as
``failed`` or ``timeout``; only a problem of our own infrastructure (bubblewrap or the container engine
missing, a temporary directory that cannot be made) is ``infrastructure_error``, the one status worth
retrying.

Limits applied to every run (and recorded in :attr:`RunResult.limits`):

- wall clock: ``spec.time_limit_s``, then SIGKILL to the whole process group and every process of the
  run's cgroup;
- CPU time (RLIMIT_CPU) a little above the wall limit, so a CPU-bound program is stopped even if the
  wall-clock watchdog were late;
- address space (RLIMIT_AS) = ``spec.memory_limit_mb``, plus a memory cgroup with the same limit when the
  cgroup hierarchy is writable (counts tmpfs files too);
- processes: a pids cgroup (``pids.max``) when writable. RLIMIT_NPROC is set as well but counts every
  process of the uid and is ignored for root, so the sandbox first drops root to a uid of its own
  (``SANDBOX_UID``);
- output: RLIMIT_FSIZE caps every file the program writes, stdout and stderr included (they go to files,
  never to pipes held in memory), so 100 MB of output costs at most the cap on disk and in memory;
- no core dumps (RLIMIT_CORE = 0).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from comparna.rna.structure import Structure, StructureFormatError
from predictors.core.parsers import Probabilities, parse_output
from predictors.core.spec import PredictorSpec
from predictors.core.venvs import venvs_dir

STATUSES = ("ok", "failed", "timeout", "too_long", "unparsable", "infrastructure_error")

REPO_ROOT = Path(__file__).resolve().parents[2]

STDERR_TAIL_BYTES = 4096
STDOUT_KEEP_BYTES = 64 * 1024
DEFAULT_OUTPUT_LIMIT_MB = 16
DEFAULT_MAX_PROCESSES = 64
#: The uid/gid a sandboxed program runs as when the worker is root. A uid of its own, not ``nobody``:
#: RLIMIT_NPROC counts every process of the uid, so another service running as ``nobody`` would eat into
#: the sandbox's process budget, and leftovers of a run could not be told apart from that service's
#: processes. ``COMPARNA_SANDBOX_UID`` overrides it (the gid follows the uid).
SANDBOX_UID = int(os.environ.get("COMPARNA_SANDBOX_UID", "64901"))
SANDBOX_GID = SANDBOX_UID
#: Where the work directory appears inside the sandbox and the container.
JOB_MOUNT = "/job"


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
    """

    sequence: str
    workdir: Path
    fasta: str = "input.fa"
    alignment: str | None = None


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


# -- cgroups ------------------------------------------------------------------------------------------------
def _own_cgroup_paths() -> dict[str, str]:
    """Controller -> path of this process's cgroup ("" key for the cgroup v2 unified hierarchy)."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctrl in parts[1].split(","):
                out[ctrl] = parts[2]
    return out


class _RunCgroups:
    """Per-run cgroups limiting pids and memory, made under our own cgroup when the hierarchy allows.

    cgroup v1 (one hierarchy per controller, as on this machine) is used when mounted; otherwise a
    cgroup v2 child is attempted. Every failure just leaves that limit unapplied (recorded as None).
    """

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, pids_max: int, memory_mb: int):
        self.dirs: list[Path] = []
        self.memory_dir: Path | None = None
        self.pids_dir: Path | None = None
        self.version: int | None = None
        name = f"comparna-{uuid.uuid4().hex[:12]}"
        own = _own_cgroup_paths()
        mem_bytes = str(memory_mb * 1024 * 1024)
        if (self.ROOT / "pids" / "cgroup.procs").exists() or (self.ROOT / "memory" / "cgroup.procs").exists():
            self.version = 1
            self.pids_dir = self._make(self.ROOT / "pids", own.get("pids"), name, {"pids.max": str(pids_max)})
            self.memory_dir = self._make(
                self.ROOT / "memory", own.get("memory"), name, {"memory.limit_in_bytes": mem_bytes}
            )
        elif (self.ROOT / "cgroup.controllers").exists():
            self.version = 2
            base = self.ROOT / own.get("", "/").lstrip("/")
            with contextlib.suppress(OSError):
                (base / "cgroup.subtree_control").write_text("+pids +memory")
            d = self._make(self.ROOT, own.get(""), name, {"pids.max": str(pids_max), "memory.max": mem_bytes})
            if d is not None:
                self.pids_dir = d if (d / "pids.max").exists() else None
                self.memory_dir = d if (d / "memory.max").exists() else None

    def _make(self, root: Path, own: str | None, name: str, settings: dict[str, str]) -> Path | None:
        if own is None:
            return None
        d = root / own.lstrip("/") / name
        try:
            d.mkdir()
        except OSError:
            return None
        self.dirs.append(d)
        try:
            for key, value in settings.items():
                if (d / key).exists():
                    (d / key).write_text(value)
                elif self.version == 1:
                    raise OSError(errno.ENOENT, f"{d / key} missing")
        except OSError:
            self._remove(d)
            return None
        return d

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def _pids(self) -> list[int]:
        pids: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return sorted(pids)

    def kill_all(self, deadline_s: float = 3.0) -> None:
        """SIGKILL every process left in the run's cgroups (daemonised or escaped children included)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            pids = self._pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def oom_killed(self) -> bool:
        d = self.memory_dir
        if d is None:
            return False
        for fname, key in (("memory.oom_control", "oom_kill"), ("memory.events", "oom_kill")):
            with contextlib.suppress(OSError, ValueError):
                for line in (d / fname).read_text().splitlines():
                    k, _, v = line.partition(" ")
                    if k == key and int(v) > 0:
                        return True
        return False

    def measurements(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.memory_dir is not None:
            for fname in ("memory.max_usage_in_bytes", "memory.peak"):
                with contextlib.suppress(OSError, ValueError):
                    out["peak_memory_mb"] = round(int((self.memory_dir / fname).read_text()) / 2**20, 1)
                    break
        if self.pids_dir is not None:
            with contextlib.suppress(OSError, ValueError):
                out["peak_processes"] = int((self.pids_dir / "pids.peak").read_text())
        return out

    @staticmethod
    def _remove(d: Path) -> None:
        for _ in range(50):
            try:
                d.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)

    def close(self) -> None:
        self.kill_all()
        for d in self.dirs:
            self._remove(d)
        self.dirs = []


# -- process execution -----------------------------------------------------------------------------------
@dataclass
class _Execution:
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    runtime_s: float = 0.0
    output: bytes = b""
    output_missing: bool = False
    stdout_size: int = 0
    stderr_tail: str = ""
    stdout_head: str = ""
    oom: bool = False
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


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _make_preexec(
    rlimits: list[tuple[int, tuple[int, int]]], procs_files: list[str], drop_to: tuple[int, int] | None
) -> Callable[[], None]:
    # Runs in the forked child before exec: only plain system calls, nothing that takes Python locks.
    def preexec() -> None:
        pid = str(os.getpid()).encode()
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        for res, lim in rlimits:
            resource.setrlimit(res, lim)
        if drop_to is not None:
            os.setgroups([])
            os.setgid(drop_to[1])
            os.setuid(drop_to[0])

    return preexec


def _reap_namespace(info_r: int, deadline_s: float = 3.0) -> None:
    """Kill the sandbox's pid-namespace init and wait until the namespace is empty.

    Killing a pid namespace's init makes the kernel kill every process in it, and the init only turns
    into a zombie once they are all gone. Without cgroups this is what guarantees that a fork bomb's
    processes are dead when the run returns. The pid is checked to still be a bubblewrap process of
    ours before it is signalled (it could have been reaped and reused).
    """
    import json

    os.set_blocking(info_r, False)
    try:
        pid = int(json.loads(os.read(info_r, 4096).decode())["child-pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    end = time.monotonic() + deadline_s
    signalled = False
    while time.monotonic() < end:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        if comm != "bwrap" or state in "ZX":
            return
        if not signalled:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            signalled = True
        time.sleep(0.005)


def _read_tail(path: Path, nbytes: int) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - nbytes))
        return f.read().decode("utf-8", errors="replace")


def _read_head(path: Path, nbytes: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(nbytes)


def _sandbox_env(home: str) -> dict[str, str]:
    # A clean environment: nothing of the worker's (credentials, settings) leaks into a predictor.
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": str(REPO_ROOT),
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


class _ProcessRunner:
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

    # Subclasses say how the argv is wrapped and how paths look from inside.
    def _command(self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None) -> list[str]:
        raise NotImplementedError

    def _mount(self, job: Job) -> str:
        raise NotImplementedError

    def _python(self) -> str:
        return sys.executable

    def _drop_to(self) -> tuple[int, int] | None:
        return None

    def _prepare(self, job: Job) -> None:  # noqa: B027 - optional hook
        pass

    def run(self, spec: PredictorSpec, job: Job) -> RunResult:
        spec.validate()
        ex = self._execute(spec, job)
        return self._finish(spec, job, ex)

    def _execute(self, spec: PredictorSpec, job: Job) -> _Execution:
        mount = self._mount(job)
        inner = format_argv(
            spec,
            sequence=job.sequence,
            workdir=mount,
            fasta=f"{mount}/{job.fasta}",
            alignment=f"{mount}/{job.alignment}" if job.alignment else None,
            python=self._python(),
        )
        ex = _Execution()
        # bubblewrap reports the host pid of the sandbox's init on this pipe (see _reap_namespace).
        info_r, info_w = os.pipe() if self.uses_info_fd else (None, None)
        try:
            argv = self._command(spec, job, inner, info_w)
        except FileNotFoundError as exc:
            ex.infrastructure_error = str(exc)
            for fd in (info_r, info_w):
                if fd is not None:
                    os.close(fd)
            return ex
        out_cap = self.output_limit_mb * 2**20
        cpu = int(spec.time_limit_s) + 2
        mem = spec.memory_limit_mb * 2**20
        drop_to = self._drop_to()
        rlimits = [
            (resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_AS, (mem, mem)),
            (resource.RLIMIT_FSIZE, (out_cap, out_cap)),
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_NPROC, (self.max_processes, self.max_processes)),
        ]
        rlimits = [r for r in rlimits if r[0] in self.child_rlimits]
        cgroups = _RunCgroups(self.max_processes, spec.memory_limit_mb) if self.use_cgroups else None
        nproc_enforced = (drop_to is not None and drop_to[0] != 0) or (drop_to is None and os.getuid() != 0)
        ex.limits = {
            "runner": self.name,
            "isolation": self.isolation,
            "wall_s": spec.time_limit_s,
            "cpu_s": cpu,
            "address_space_mb": spec.memory_limit_mb,
            "file_size_mb": self.output_limit_mb,
            "rlimit_nproc": self.max_processes if nproc_enforced else None,
            "cgroup_pids_max": self.max_processes if cgroups and cgroups.pids_dir else None,
            "cgroup_memory_mb": spec.memory_limit_mb if cgroups and cgroups.memory_dir else None,
            "cgroup_version": cgroups.version if cgroups and cgroups.dirs else None,
            "uid": drop_to[0] if drop_to else os.getuid(),
        }
        ex.limits.update(self._extra_limits(spec))
        iodir = None
        try:
            iodir = Path(tempfile.mkdtemp(prefix="comparna-io-"))
            stdout_path, stderr_path = iodir / "stdout", iodir / "stderr"
            self._prepare(job)
            with open(stdout_path, "wb") as out_f, open(stderr_path, "wb") as err_f:
                start = time.monotonic()
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out_f,
                    stderr=err_f,
                    cwd=job.workdir,
                    env=_sandbox_env(self._mount(job)),
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(info_w,) if info_w is not None else (),
                    preexec_fn=_make_preexec(rlimits, cgroups.procs_files if cgroups else [], drop_to),
                )
                try:
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
                        _reap_namespace(info_r)
                    self._cleanup(job)
                ex.runtime_s = time.monotonic() - start
            rc = proc.returncode
            ex.exit_code, ex.signal = self._decode_returncode(rc)
            if cgroups is not None:
                ex.oom = cgroups.oom_killed()
                ex.resources = cgroups.measurements()
            ex.stdout_size = stdout_path.stat().st_size
            ex.stderr_tail = _read_tail(stderr_path, STDERR_TAIL_BYTES)
            ex.stdout_head = _read_head(stdout_path, STDOUT_KEEP_BYTES).decode("utf-8", errors="replace")
            if spec.output_file is None:
                ex.output = _read_head(stdout_path, out_cap)
            else:
                target = job.workdir / spec.output_file
                if target.is_file():
                    ex.output = _read_head(target, out_cap)
                else:
                    ex.output_missing = True
        except (OSError, subprocess.SubprocessError) as exc:
            ex.infrastructure_error = f"{type(exc).__name__}: {exc}"
        finally:
            for fd in (info_r, info_w):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            if cgroups is not None:
                cgroups.close()
            if iodir is not None:
                shutil.rmtree(iodir, ignore_errors=True)
        return ex

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {}

    def _cleanup(self, job: Job) -> None:  # noqa: B027 - optional hook
        """Called after the process and its group were killed; e.g. remove a container."""

    def _decode_returncode(self, rc: int) -> tuple[int | None, int | None]:
        if rc < 0:
            return None, -rc
        return rc, None

    def _finish(self, spec: PredictorSpec, job: Job, ex: _Execution) -> RunResult:
        base = RunResult(
            status="ok",
            runner=self.name,
            limits=ex.limits,
            exit_code=ex.exit_code,
            signal=_signal_name(ex.signal) if ex.signal else None,
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
                message=f"memory limit of {spec.memory_limit_mb} MB exceeded (killed by the kernel)",
            )
        if ex.signal == signal.SIGKILL and self.isolation == "container":
            return replace(
                base,
                status="failed",
                message=f"killed by SIGKILL (likely the container memory limit, {spec.memory_limit_mb} MB)",
            )
        if ex.signal is not None:
            return replace(base, status="failed", message=f"killed by {_signal_name(ex.signal)}")
        if ex.exit_code != 0:
            return replace(base, status="failed", message=f"exit status {ex.exit_code}")
        if ex.output_missing:
            return replace(
                base, status="unparsable", message=f"output file {spec.output_file!r} was not written"
            )
        text = ex.output.decode("utf-8", errors="replace")
        try:
            parsed = parse_output(spec.output_format, text, job.sequence)
        except StructureFormatError as exc:
            return replace(base, status="unparsable", message=f"{spec.output_format}: {exc}")
        return replace(base, structure=parsed.structure, probabilities=parsed.probabilities)


class LocalRunner(_ProcessRunner):
    """UNSANDBOXED: a plain subprocess with the same rlimits, cgroups and timeout, but no isolation.

    The program sees the whole file system and the network and runs as the worker's user. Only for
    comparison and benchmarks of the sandbox's overhead, never for untrusted predictors.
    """

    name = "local-unsandboxed"
    isolation = "none"

    def _mount(self, job: Job) -> str:
        return str(job.workdir)

    def _command(self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None) -> list[str]:
        return inner

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {"network": "host", "filesystem": "host"}


class SandboxRunner(_ProcessRunner):
    """bubblewrap sandbox: no network, read-only system, private /tmp, only the work dir writable.

    Inside the sandbox the work directory is ``/job``; ``/usr``, ``/etc``, the repository and the
    virtualenv are read-only; all namespaces (network, pid, ipc, uts, user, cgroup) are new, so the
    program cannot see or signal other processes and has only a loopback interface. When the worker runs
    as root the program runs as ``SANDBOX_UID`` (no capabilities, RLIMIT_NPROC enforceable).

    Parameters
    ----------
    extra_ro_binds : sequence of str
        More host paths to expose read-only at the same path (e.g. another virtualenv).
    tmp_size_mb : int
        Size of the private /tmp (tmpfs).
    """

    name = "sandbox-bwrap"
    isolation = "bubblewrap"
    uses_info_fd = True

    def __init__(self, *, extra_ro_binds: tuple[str, ...] = (), tmp_size_mb: int = 256, **kwargs: Any):
        super().__init__(**kwargs)
        self.extra_ro_binds = tuple(extra_ro_binds)
        self.tmp_size_mb = tmp_size_mb

    @staticmethod
    def available() -> bool:
        return shutil.which("bwrap") is not None

    def _mount(self, job: Job) -> str:
        return JOB_MOUNT

    def _drop_to(self) -> tuple[int, int] | None:
        return (SANDBOX_UID, SANDBOX_GID) if os.getuid() == 0 else None

    def _prepare(self, job: Job) -> None:
        # The unprivileged program must be able to write its work dir and read its inputs.
        drop = self._drop_to()
        if drop is None:
            return
        # bubblewrap mounts the work dir as the unprivileged uid, so every ancestor must be searchable.
        for parent in Path(job.workdir).resolve().parents:
            st = parent.stat()
            if not st.st_mode & 0o001 and st.st_uid != drop[0]:
                raise PermissionError(
                    f"work dir {job.workdir} is not reachable by uid {drop[0]}: {parent} is not o+x"
                )
        os.chown(job.workdir, *drop)
        for p in job.workdir.rglob("*"):
            os.chown(p, *drop, follow_symlinks=False)

    def _ro_paths(self) -> list[str]:
        paths = [str(REPO_ROOT)]
        venv = Path(sys.prefix).resolve()
        if REPO_ROOT not in venv.parents and venv != REPO_ROOT:
            paths.append(str(venv))
        if venvs_dir().is_dir() and REPO_ROOT not in venvs_dir().parents:  # method venvs (core/venvs.py)
            paths.append(str(venvs_dir()))
        paths.extend(self.extra_ro_binds)
        return paths

    def _command(self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None) -> list[str]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise FileNotFoundError("bubblewrap (bwrap) is not installed")
        cmd = [
            bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            *(["--info-fd", str(info_fd)] if info_fd is not None else []),
            "--hostname",
            "comparna-sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
            "--ro-bind",
            "/etc",
            "/etc",
        ]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            p = Path(top)
            if p.is_symlink():
                cmd += ["--symlink", os.readlink(p), top]
            elif p.is_dir():
                cmd += ["--ro-bind", top, top]
        for path in self._ro_paths():
            cmd += ["--ro-bind", path, path]
        cmd += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.tmp_size_mb * 2**20),
            "--tmpfs",
            "/tmp",
            "--bind",
            str(job.workdir),
            JOB_MOUNT,
            "--chdir",
            JOB_MOUNT,
            "--",
            *inner,
        ]
        return cmd

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {
            "network": "none",
            "filesystem": "read-only system, writable /job, private /tmp",
            "tmp_size_mb": self.tmp_size_mb,
        }

    def _decode_returncode(self, rc: int) -> tuple[int | None, int | None]:
        return decode_wrapped_returncode(rc)


def select_runner(spec: PredictorSpec) -> Runner:
    """The container runner when the spec names an image and an engine exists, else the sandbox."""
    from predictors.core.container import ContainerRunner  # local import: optional engine discovery

    if spec.image and ContainerRunner.available():
        return ContainerRunner()
    return SandboxRunner()


def _check_sequence(sequence: str) -> str:
    seq = "".join(sequence.split())
    if not seq:
        raise ValueError("empty sequence")
    # Letters only: the sequence may be an argv element, and must never look like an option or a path.
    if not seq.isascii() or not seq.isalpha():
        bad = next(c for c in seq if not (c.isascii() and c.isalpha()))
        raise ValueError(f"sequence contains {bad!r}; only letters are allowed")
    return seq


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
    (a fresh temporary directory, removed afterwards, when not given; a given one is left in place and
    its ancestors must be searchable by ``SANDBOX_UID`` for the sandbox).

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
    seq = _check_sequence(sequence)
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"sequence name {name!r} is empty or contains whitespace")
    runner = runner if runner is not None else select_runner(spec)
    if len(seq) > spec.max_length:
        return RunResult(
            status="too_long",
            runner=runner.name,
            predictor=spec.name,
            fingerprint=spec.fingerprint(),
            limits={"max_length": spec.max_length},
            message=f"sequence length {len(seq)} exceeds the limit of {spec.max_length}",
        )
    own_dir = workdir is None
    try:
        wd = Path(tempfile.mkdtemp(prefix="comparna-job-")) if own_dir else Path(workdir)
        wd.mkdir(parents=True, exist_ok=True)
        (wd / "input.fa").write_text(f">{name}\n{seq}\n")
        if alignment is not None:
            (wd / "input.sto").write_text(alignment)
    except OSError as exc:
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
        )
        result = runner.run(spec, job)
    finally:
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)
    return replace(result, limits={**result.limits, "max_length": spec.max_length})
