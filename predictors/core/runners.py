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

What the sandbox sees (:class:`SandboxRunner`): ``/usr`` and a minimal ``/etc`` read-only, the Python
environment (``.venv`` and the method virtualenvs of ``COMPARNA_VENVS_DIR``) read-only at their host
paths, the wrapper packages (:data:`SANDBOX_PACKAGES`) read-only under :data:`PROGRAM_ROOT`, the job's
work dir at ``/job`` and a private ``/tmp``. Never the repository root, the data directory (database,
broker, logs, secret key), settings or ``.git``. Directories are bound by file descriptor, so the
checkout may sit anywhere (under ``/tmp``, in a path with spaces, below a directory the sandbox uid
cannot traverse). Outputs are read without following links, only from regular files the sandbox uid
owns, and capped (:func:`predictors.core.workspace.read_job_file`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from comparna.rna.structure import Structure, StructureFormatError
from predictors.core.parsers import Probabilities, parse_output
from predictors.core.spec import PredictorSpec
from predictors.core.venvs import venvs_dir
from predictors.core.workspace import (
    OutputRejected,
    RunDir,
    cgroup_name,
    data_dir,
    make_stager,
    new_run_dir,
    read_job_file,
    stage_points,
)

# "awaiting": a web service accepted the job; its structure arrives later by upload (issue 17).
STATUSES = ("ok", "failed", "timeout", "too_long", "unparsable", "infrastructure_error", "awaiting")

REPO_ROOT = Path(__file__).resolve().parents[2]

STDERR_TAIL_BYTES = 4096
#: Longest message stored with a run (parser messages quote the program's output).
MESSAGE_MAX_CHARS = 1000
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
#: Where the wrapper packages appear inside the sandbox and the container (the programs' PYTHONPATH).
PROGRAM_ROOT = "/opt/comparna"
#: The repository folders (and single modules) a sandboxed program may import: the wrappers and the pure
#: core they use
#: (``tests/unit/test_sandbox_exposure.py`` checks that every first-party import of a wrapper is here).
#: Parent packages are not exposed (their ``__init__`` would load Celery and settings): inside the
#: sandbox ``comparna``, ``ingest`` and ``predictors`` are namespace packages.
SANDBOX_PACKAGES = ("predictors/programs", "comparna/rna", "predictors/core/venvs.py")
#: What a program may see of the host's /etc: the dynamic linker's cache, the ``alternatives`` links of
#: /usr/bin and the time zone. Users and groups are replaced by a two-line passwd/group of our own.
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf")



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
        # Named after this process, so that a later worker removes it if this one dies mid-run.
        name = cgroup_name()
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
    output_rejected: str | None = None
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


_PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux/glibc: --die-with-parent still applies
    _prctl = None


def _make_preexec(
    rlimits: list[tuple[int, tuple[int, int]]],
    procs_files: list[str],
    drop_to: tuple[int, int] | None,
    stage: Callable[[], None] | None = None,
) -> Callable[[], None]:
    parent = os.getpid()

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
        if stage is not None:
            stage()  # still root: the private mount namespace with the staged binds
        if drop_to is not None:
            os.setgroups([])
            os.setgid(drop_to[1])
            os.setuid(drop_to[0])
        # The run dies with the worker (e.g. a pool child killed with SIGKILL): set after the uid change,
        # which clears it. bubblewrap's --die-with-parent carries it on inside the sandbox.
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the worker died before the line above
            os._exit(125)

    return preexec


def _reap_namespace(info_r: int, deadline_s: float = 3.0) -> None:
    """Kill the sandbox's pid-namespace init, wait until the namespace is empty, and reap the init.

    Killing a pid namespace's init makes the kernel kill every process in it, and the init only turns
    into a zombie once they are all gone. Without cgroups this is what guarantees that a fork bomb's
    processes are dead when the run returns. The pid is checked to still be a bubblewrap process of
    ours before it is signalled (it could have been reaped and reused). bubblewrap's monitor may exit
    before that init: the init is then an orphan, re-parented to us (see :func:`_subreaper`), and reaped
    here — otherwise it would be left to the host's init, which is not always one that reaps.
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
            break
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        if comm != "bwrap" or state in "ZX":
            break
        if not signalled:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            signalled = True
        time.sleep(0.005)
    while time.monotonic() < end:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not (or no longer) our child: reaped by bubblewrap's monitor
        if done:
            return
        time.sleep(0.005)


_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


@contextlib.contextmanager
def _subreaper() -> Iterator[None]:
    """While running a sandbox, orphans of our descendants (bubblewrap's init) become our children."""
    if _prctl is None:
        yield
        return
    before = ctypes.c_int(0)
    _prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        _prctl(_PR_SET_CHILD_SUBREAPER, before.value, 0, 0, 0)


def _read_tail(path: Path, nbytes: int) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - nbytes))
        return f.read().decode("utf-8", errors="replace")


def _read_head(path: Path, nbytes: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(nbytes)


def _sandbox_env(home: str, pythonpath: str = PROGRAM_ROOT) -> dict[str, str]:
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
        out_cap = self.output_limit_mb * 2**20
        cpu = int(spec.time_limit_s) + 2
        mem = spec.memory_limit_mb * 2**20
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
        try:
            if rundir is None:
                rundir = new_run_dir()
            job = replace(job, rundir=rundir)
            # bubblewrap reports the host pid of the sandbox's init on this pipe (see _reap_namespace).
            if self.uses_info_fd:
                info_r, info_w = os.pipe()
            self._prepare(job)
            job = replace(job, staged=tuple(self._stage(job)))
            argv = self._command(spec, job, inner, info_w, fds)
            cgroups = _RunCgroups(self.max_processes, spec.memory_limit_mb) if self.use_cgroups else None
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
                "address_space_mb": spec.memory_limit_mb,
                "file_size_mb": self.output_limit_mb,
                "rlimit_nproc": self.max_processes if nproc_enforced else None,
                "cgroup_pids_max": self.max_processes if cgroups and cgroups.pids_dir else None,
                "cgroup_memory_mb": spec.memory_limit_mb if cgroups and cgroups.memory_dir else None,
                "cgroup_version": cgroups.version if cgroups and cgroups.dirs else None,
                "uid": uid,
            }
            ex.limits.update(self._extra_limits(spec))
            stdout_path, stderr_path = rundir.stdout, rundir.stderr
            private = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with (
                os.fdopen(os.open(stdout_path, private, 0o600), "wb") as out_f,
                os.fdopen(os.open(stderr_path, private, 0o600), "wb") as err_f,
                _subreaper() if self.uses_info_fd else contextlib.nullcontext(),
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
                    preexec_fn=_make_preexec(
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
        return ex

    def _env(self, job: Job) -> dict[str, str]:
        return _sandbox_env(self._mount(job))

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
                base, status="unparsable", message=_bounded(f"{spec.output_format}: {exc}", MESSAGE_MAX_CHARS)
            )
        return replace(base, structure=parsed.structure, probabilities=parsed.probabilities)


def _bounded(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 20] + f" ... [{len(text) - n + 20} more characters]"


class LocalRunner(_ProcessRunner):
    """UNSANDBOXED: a plain subprocess with the same rlimits, cgroups and timeout, but no isolation.

    The program sees the whole file system and the network and runs as the worker's user. Only for
    comparison and benchmarks of the sandbox's overhead, never for untrusted predictors.
    """

    name = "local-unsandboxed"
    isolation = "none"

    def _mount(self, job: Job) -> str:
        return str(job.workdir)

    def _env(self, job: Job) -> dict[str, str]:
        return _sandbox_env(self._mount(job), pythonpath=str(REPO_ROOT))

    def _command(
        self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None, fds: list[int]
    ) -> list[str]:
        return inner

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {"network": "host", "filesystem": "host"}


class ExposureError(OSError):
    """A path that would expose the repository, the data directory or ``.git`` to a program."""


def check_exposable(path: str | Path) -> Path:
    """``path`` (absolute, symlinks resolved) when a program may see it, else :class:`ExposureError`.

    Refused: the repository root and ``.git``, the data directory, and any directory holding one of them
    (a virtualenv configured as the checkout itself, ``/``, ``/tmp`` for a checkout under /tmp, ...).
    """
    real = Path(path).resolve()
    for secret in (REPO_ROOT, REPO_ROOT / ".git", data_dir().resolve()):
        if real == secret or real in secret.parents or secret in real.parents and secret != REPO_ROOT:
            raise ExposureError(f"refusing to expose {path} to a program: it is or holds {secret}")
    return real


def program_mounts(extra: tuple[str, ...] = ()) -> list[tuple[Path, str]]:
    """(host directory, path inside) of everything a program may read besides /usr and /etc.

    The Python environment and the method virtualenvs appear at their host paths (their scripts and
    ``pyvenv.cfg`` name those), the wrapper packages under :data:`PROGRAM_ROOT`.
    """
    mounts: list[tuple[Path, str]] = []
    prefix = os.path.abspath(sys.prefix)
    if not prefix.startswith("/usr/"):
        mounts.append((check_exposable(prefix), prefix))
    venvs = venvs_dir()
    if venvs.is_dir():
        mounts.append((check_exposable(venvs), str(venvs)))
    for pkg in SANDBOX_PACKAGES:
        mounts.append((check_exposable(REPO_ROOT / pkg), f"{PROGRAM_ROOT}/{pkg}"))
    for path in extra:
        mounts.append((check_exposable(path), os.path.abspath(path)))
    return mounts


def check_reachable(path: Path, uid: int, gid: int) -> None:
    """Raise :class:`ExposureError` unless ``uid`` can traverse every ancestor of ``path``.

    bubblewrap runs as the sandbox uid and resolves every path it binds itself: a checkout below a
    directory closed to others (e.g. root's home) cannot be exposed, and this says so clearly.
    """
    for parent in reversed(path.parents):
        st = parent.stat()
        if st.st_uid == uid:
            ok = st.st_mode & 0o100
        elif st.st_gid == gid:
            ok = st.st_mode & 0o010
        else:
            ok = st.st_mode & 0o001
        if not ok:
            raise ExposureError(
                f"the sandbox uid {uid} cannot reach {path}: {parent} is not searchable by it "
                f"(chmod o+x {parent}, or move the checkout / set COMPARNA_JOBS_DIR)"
            )


def _data_fd(text: str) -> int:
    """A pipe's read end holding ``text`` (small: it fits the pipe buffer), for ``--ro-bind-data``."""
    r, w = os.pipe()
    try:
        os.write(w, text.encode())
    finally:
        os.close(w)
    return r


class SandboxRunner(_ProcessRunner):
    """bubblewrap sandbox: no network, read-only system, private /tmp, only the work dir writable.

    Inside the sandbox the work directory is ``/job``; ``/usr``, a minimal ``/etc``, the Python
    environment and the wrapper packages are read-only (see the module docstring), the root is read-only;
    all namespaces (network, pid, ipc, uts, user, cgroup) are new, so the program cannot see or signal
    other processes and has only a loopback interface. When the worker runs as root the program runs as
    ``SANDBOX_UID`` (no capabilities, RLIMIT_NPROC enforceable). The sandbox dies with the worker
    (PR_SET_PDEATHSIG on bubblewrap, ``--die-with-parent`` inside).

    Parameters
    ----------
    extra_ro_binds : sequence of str
        More host directories to expose read-only at the same path (e.g. another virtualenv); the
        repository root, ``.git`` and the data directory are refused.
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
        os.chown(job.workdir, *drop)
        for p in job.workdir.rglob("*"):
            os.chown(p, *drop, follow_symlinks=False)

    def _sources(self, job: Job) -> list[Path]:
        return [host for host, _ in program_mounts(self.extra_ro_binds)] + [Path(job.workdir).resolve()]

    def _stage(self, job: Job) -> list[tuple[Path, Path]]:
        # A root worker stages every source (see workspace.make_stager): the checkout and a caller's work
        # dir may then sit below directories the sandbox uid cannot traverse (mktemp -d, /root, ...).
        if self._drop_to() is None or job.rundir is None:
            return []
        return stage_points(job.rundir, self._sources(job))

    def _command(
        self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None, fds: list[int]
    ) -> list[str]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise FileNotFoundError("bubblewrap (bwrap) is not installed")
        uid, gid = self._drop_to() or (os.getuid(), os.getgid())
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
        ]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            p = Path(top)
            if p.is_symlink():
                cmd += ["--symlink", os.readlink(p), top]
            elif p.is_dir():
                cmd += ["--ro-bind", top, top]
        for entry in ETC_ENTRIES:
            cmd += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
        # Users and groups of our own: the host's passwd/group are not the program's business.
        passwd = f"root:x:0:0::/:/usr/sbin/nologin\ncomparna:x:{uid}:{gid}::{JOB_MOUNT}:/usr/sbin/nologin\n"
        group = f"root:x:0:\ncomparna:x:{gid}:\n"
        for name, text in (("passwd", passwd), ("group", group)):
            fd = _data_fd(text)
            fds.append(fd)
            cmd += ["--ro-bind-data", str(fd), f"/etc/{name}"]
        tmp_size = str(self.tmp_size_mb * 2**20)
        cmd += ["--proc", "/proc", "--dev", "/dev", "--size", tmp_size, "--tmpfs", "/tmp"]
        # After /tmp: a checkout under /tmp is bound into the private /tmp, not hidden by it.
        staged = dict(job.staged)
        for host, inside in program_mounts(self.extra_ro_binds):
            source = staged.get(host, host)
            check_reachable(source, uid, gid)
            cmd += ["--ro-bind", str(source), inside]
        workdir = Path(job.workdir).resolve()
        source = staged.get(workdir, workdir)
        check_reachable(source, uid, gid)
        cmd += ["--bind", str(source), JOB_MOUNT, "--remount-ro", "/", "--chdir", JOB_MOUNT, "--", *inner]
        return cmd

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {
            "network": "none",
            "filesystem": "read-only system and programs, writable /job, private /tmp",
            "tmp_size_mb": self.tmp_size_mb,
        }

    def _decode_returncode(self, rc: int) -> tuple[int | None, int | None]:
        return decode_wrapped_returncode(rc)


def select_runner(spec: PredictorSpec) -> Runner:
    """By the spec's kind: a web service, an owner's image, else the container runner when the spec names an
    image and an engine exists, else the sandbox."""
    from predictors.core.container import ContainerRunner  # local import: optional engine discovery
    from predictors.core.owner_image import OwnerImageRunner
    from predictors.core.webservice import WebServiceRunner

    if spec.kind == "web":
        return WebServiceRunner()
    if spec.kind == "image":
        return OwnerImageRunner()
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
