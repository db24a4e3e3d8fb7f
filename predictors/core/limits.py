"""Limits of a run, applied in the child before exec and around it (cgroups, reaping).

Limits applied to every run (and recorded in :attr:`RunResult.limits`):

- wall clock: ``spec.time_limit_s``, then SIGKILL to the whole process group and every process of the
  run's cgroup;
- CPU time (RLIMIT_CPU) a little above the wall limit, so a CPU-bound program is stopped even if the
  wall-clock watchdog were late;
- address space (RLIMIT_AS) = ``spec.memory_limit_mb``, plus a memory cgroup with the same limit when the
  cgroup hierarchy is writable (counts tmpfs files too), both clamped to :func:`run_share_mb` (the
  host's memory, read at run time, minus headroom, divided by the runs side by side): a spec never gets
  more than its share of the machine, and :mod:`predictors.core.memory_budget` holds the sum of the live
  runs' limits under the ceiling;
- processes: a pids cgroup (``pids.max``) when writable. RLIMIT_NPROC is set as well but counts every
  process of the uid and is ignored for root, so the sandbox first drops root to a uid of its own
  (``SANDBOX_UID``);
- output: RLIMIT_FSIZE caps every file the program writes, stdout and stderr included (they go to files,
  never to pipes held in memory), so 100 MB of output costs at most the cap on disk and in memory;
- no core dumps (RLIMIT_CORE = 0).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import resource
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from predictors.core.workspace import cgroup_name, remove_cgroup_dir

#: Memory kept for the worker, the database and the other runs: a quarter of the host's, at least 1 GiB.
MEMORY_HEADROOM_FRACTION = 0.25
MEMORY_HEADROOM_MIN_MB = 1024
#: A deployment may set a lower ceiling (e.g. several workers on one host): ``COMPARNA_MEMORY_CEILING_MB``.
MEMORY_CEILING_ENV = "COMPARNA_MEMORY_CEILING_MB"


def host_memory_mb() -> int | None:
    """The memory this worker can have, in MB: ``MemTotal`` of /proc/meminfo, or less when a memory cgroup of
    this process (or one above it) is limited lower. None when it cannot be read (not Linux)."""
    total = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) // 1024
                break
    except (OSError, ValueError, IndexError):
        return None
    own = own_cgroup_paths()
    candidates = []
    if "memory" in own:
        candidates.append((RunCgroups.ROOT / "memory", own["memory"], "memory.limit_in_bytes"))
    if "" in own:
        candidates.append((RunCgroups.ROOT, own[""], "memory.max"))
    for root, rel, fname in candidates:
        d = root / rel.lstrip("/")
        while True:
            with contextlib.suppress(OSError, ValueError):
                text = (d / fname).read_text().strip()
                if text != "max":
                    limit = int(text) // 2**20
                    total = limit if total is None else min(total, limit)
            if d == root or root not in d.parents:
                break
            d = d.parent
    return total


def memory_ceiling_mb() -> int | None:
    """The largest memory limit a run gets on this host (read now): the host's memory
    (:func:`host_memory_mb`) minus :data:`MEMORY_HEADROOM_FRACTION` of it (at least
    :data:`MEMORY_HEADROOM_MIN_MB`), or the lower ``COMPARNA_MEMORY_CEILING_MB``. None when the host's
    memory cannot be read."""
    total = host_memory_mb()
    ceiling = None
    if total is not None:
        ceiling = max(16, total - max(MEMORY_HEADROOM_MIN_MB, int(total * MEMORY_HEADROOM_FRACTION)))
    configured = os.environ.get(MEMORY_CEILING_ENV, "").strip()
    if configured.isdigit() and int(configured) >= 16:
        ceiling = int(configured) if ceiling is None else min(ceiling, int(configured))
    return ceiling


#: How many runs one host runs at once (the predict worker's concurrency): they share the ceiling (issue 36).
RUNS_ENV = "COMPARNA_PREDICT_CONCURRENCY"
DEFAULT_RUNS = 2


def runs_per_host() -> int:
    """How many runs this host runs at once (``COMPARNA_PREDICT_CONCURRENCY``, at least 1; 2 by default as
    in ``make run`` and docker-compose)."""
    value = os.environ.get(RUNS_ENV, "").strip()
    return max(1, int(value)) if value.isdigit() else DEFAULT_RUNS


def run_share_mb() -> int | None:
    """The largest memory limit one run gets (issue 36): :func:`memory_ceiling_mb` divided by
    :func:`runs_per_host`, at least 16 MB, so that the runs side by side never hold more than the host's
    ceiling together. None when the host's memory cannot be read."""
    ceiling = memory_ceiling_mb()
    return None if ceiling is None else max(16, ceiling // runs_per_host())


def memory_limit_problem(memory_limit_mb: object) -> str | None:
    """Why a method may not ask for ``memory_limit_mb`` on this host (registration), or None when it may:
    more than a run's share of the host's memory (:func:`run_share_mb`)."""
    share = run_share_mb()
    if isinstance(memory_limit_mb, int) and share is not None and memory_limit_mb > share:
        return (
            f"memory limit of {memory_limit_mb} MB is more than this server gives a run: at most "
            f"{share} MB ({runs_per_host()} runs side by side share {memory_ceiling_mb()} MB, its memory "
            "minus what the server itself needs)"
        )
    return None


def effective_memory_mb(memory_limit_mb: int) -> int:
    """The memory limit a run really gets: the spec's, clamped to a run's share of the host
    (:func:`run_share_mb`; a spec stored before the ceiling, or registered on a bigger host, still runs,
    within this host's budget)."""
    share = run_share_mb()
    return memory_limit_mb if share is None else min(memory_limit_mb, share)


def own_cgroup_paths() -> dict[str, str]:
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


class RunCgroups:
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
        own = own_cgroup_paths()
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
            remove_cgroup_dir(d)
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


    def close(self) -> None:
        self.kill_all()
        for d in self.dirs:
            remove_cgroup_dir(d)
        self.dirs = []


_PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux/glibc: --die-with-parent still applies
    _prctl = None


def make_preexec(
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


def reap_namespace(info_r: int, deadline_s: float = 3.0) -> None:
    """Kill the sandbox's pid-namespace init, wait until the namespace is empty, and reap the init.

    Killing a pid namespace's init makes the kernel kill every process in it, and the init only turns
    into a zombie once they are all gone. Without cgroups this is what guarantees that a fork bomb's
    processes are dead when the run returns. The pid is checked to still be a bubblewrap process of
    ours before it is signalled (it could have been reaped and reused). bubblewrap's monitor may exit
    before that init: the init is then an orphan, re-parented to us (see :func:`subreaper`), and reaped
    here — otherwise it would be left to the host's init, which is not always one that reaps.
    """
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
def subreaper() -> Iterator[None]:
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
