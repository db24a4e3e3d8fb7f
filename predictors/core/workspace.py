"""Where runs keep their files, who owns them, and how leftovers of dead workers are found and removed.

Every run gets a *run directory* under the jobs root (``COMPARNA_JOBS_DIR``, default
``$TMPDIR/comparna-jobs-<uid>``, 0711: traversable, not listable): ``work/`` is the program's writable
work dir (mounted at ``/job`` in the sandbox), ``stdout`` and ``stderr`` (0600) are written by the kernel
through descriptors the program cannot replace. The jobs root is outside the data directory: bubblewrap
runs as the sandbox uid and must be able to reach the work dir, while the data directory is 0700.
Run directories and per-run cgroups are named after the process that made them
(:func:`process_token`): boot id, pid namespace, pid and start time, so that a later worker can tell for
sure whether that process is dead (pids are reused; the start time tells them apart) and remove what it
left behind (:func:`clean_leftovers`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import re
import secrets
import signal
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from predictors.core.removal import remove_tree

log = logging.getLogger(__name__)
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux/glibc
    _libc = None

_REPO_ROOT = Path(__file__).resolve().parents[2]
_TOKEN = r"[0-9a-f]{8}\.[0-9]+\.[0-9]+\.[0-9]+"
RUN_DIR_RE = re.compile(rf"^run-(?P<token>{_TOKEN})-[0-9a-f]{{8}}$")
CGROUP_RE = re.compile(rf"^comparna-(?P<token>{_TOKEN})-[0-9a-f]{{8}}$")


def data_dir() -> Path:
    """``COMPARNA_DATA_DIR`` or ``<repo>/var`` (the same rule as the Django settings)."""
    configured = os.environ.get("COMPARNA_DATA_DIR", "").strip()
    return Path(configured).resolve() if configured else _REPO_ROOT / "var"


def jobs_root() -> Path:
    """The jobs root, created 0711 (run dirs of every worker of this uid on this host live here)."""
    configured = os.environ.get("COMPARNA_JOBS_DIR", "").strip()
    if configured:
        root = Path(configured).resolve()
    else:
        root = Path(tempfile.gettempdir()) / f"comparna-jobs-{os.geteuid()}"
    make_owned_dir(root, 0o711)
    return root


def make_owned_dir(path: Path, mode: int = 0o700) -> None:
    """Create ``path`` (parents included) with ``mode``; an existing one must be ours, not a symlink.

    A predictable name (e.g. under /tmp) could have been made by someone else first: such a directory
    is refused, never used.

    Raises
    ------
    PermissionError
        When the directory exists but is a symlink or belongs to another user.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise PermissionError(f"{path} is not a directory owned by uid {os.geteuid()}; refusing to use it")
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


# -- process identity ---------------------------------------------------------------------------------
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8]
    except OSError:
        return "00000000"


def _pid_namespace(pid: int | str = "self") -> int:
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return 0


def _start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); the start time is field 22.
    return int(fields[19]) if fields[0] not in ("Z", "X") else None


def process_token(pid: int | None = None) -> str:
    """A host-unique name of a live process: ``<boot id>.<pid namespace>.<pid>.<start time>``."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}.{_pid_namespace()}.{pid}.{_start_time(pid) or 0}"


def token_alive(token: str) -> bool | None:
    """Whether the process named by ``token`` still runs; None when this process cannot tell.

    Only a token of this boot and this pid namespace can be checked (another host or container sees
    other pids): for those the answer is None and callers fall back to time limits.
    """
    try:
        boot, pidns, pid, start = token.split(".")
        pid_i, start_i, pidns_i = int(pid), int(start), int(pidns)
    except ValueError:
        return None
    if boot != _boot_id() or pidns_i != _pid_namespace():
        return None
    return _start_time(pid_i) == start_i


# -- run directories ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunDir:
    """One run's directory: ``work/`` (the program's), ``stdout`` and ``stderr`` (the worker's).

    ``quota_mb`` is the size of the tmpfs mounted on ``work/`` (see :func:`new_run_dir`), None when the
    work dir is a plain directory of the jobs root (a worker that is not root cannot mount).
    """

    path: Path
    quota_mb: int | None = None

    @property
    def work(self) -> Path:
        return self.path / "work"

    @property
    def stdout(self) -> Path:
        return self.path / "stdout"

    @property
    def stderr(self) -> Path:
        return self.path / "stderr"

    def remove(self) -> bool:
        """Remove the run directory; never raises (see :func:`remove_tree`). False when something is left."""
        return remove_tree(self.path)


#: Size of a run's work dir (``/job``) when the worker can mount it as a tmpfs: ``COMPARNA_JOB_DIR_MB``.
DEFAULT_JOB_DIR_MB = 256
#: Files and directories a run's work dir may hold (a tmpfs inode costs memory and removal time).
JOB_DIR_INODES = 100_000
_MS_NOSUID, _MS_NODEV = 2, 4


def job_dir_quota_mb() -> int:
    """The per-run size of the work dir in MB: ``COMPARNA_JOB_DIR_MB`` or :data:`DEFAULT_JOB_DIR_MB`."""
    configured = os.environ.get("COMPARNA_JOB_DIR_MB", "").strip()
    return int(configured) if configured.isdigit() and int(configured) > 0 else DEFAULT_JOB_DIR_MB


def _mount_quota(work: Path, size_mb: int) -> bool:
    """Mount a size-limited tmpfs on ``work`` (root only): what a run writes to its work dir is bounded in
    total, not only per file (RLIMIT_FSIZE); full, the program gets ENOSPC and the host disk is untouched.
    Its pages are charged to the memory cgroup of the program that writes them."""
    if _libc is None or os.geteuid() != 0:
        return False
    options = f"size={size_mb * 2**20},nr_inodes={JOB_DIR_INODES},mode=0700,uid=0,gid=0".encode()
    if _libc.mount(b"comparna-job", os.fsencode(work), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        log.warning("cannot mount the job-dir tmpfs on %s: %s; no quota", work, os.strerror(err))
        return False
    return True


def new_run_dir() -> RunDir:
    """A fresh run directory (0711; its ``work/`` 0700) under :func:`jobs_root`, named after this process.

    A root worker mounts a tmpfs of :func:`job_dir_quota_mb` on ``work/`` (the per-run disk quota, issue 26);
    :meth:`RunDir.remove` and :func:`clean_leftovers` detach it.
    """
    root = jobs_root()
    while True:
        path = root / f"run-{process_token()}-{secrets.token_hex(4)}"
        try:
            os.mkdir(path, 0o711)
        except FileExistsError:
            continue
        os.chmod(path, 0o711)  # whatever the umask: the sandbox uid traverses it to its work dir
        os.mkdir(path / "work", 0o700)
        quota = job_dir_quota_mb()
        return RunDir(path, quota if _mount_quota(path / "work", quota) else None)


def work_dir_full(workdir: Path, *, margin_bytes: int = 64 * 1024) -> bool:
    """Whether the tmpfs of a work dir is (nearly) full: the program ran into the job-dir quota."""
    try:
        st = os.statvfs(workdir)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize <= margin_bytes or (st.f_files > 0 and st.f_favail <= 1)


def cgroup_name() -> str:
    """Name of a new per-run cgroup (see :data:`CGROUP_RE`)."""
    return f"comparna-{process_token()}-{secrets.token_hex(4)}"


# -- leftovers of dead workers -----------------------------------------------------------------------
def _kill_cgroup(d: Path, deadline_s: float = 3.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            pids = []
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    remove_cgroup_dir(d)


def remove_cgroup_dir(d: Path) -> None:
    """Remove an emptied cgroup directory, waiting up to ~1 s for the kernel to let its last task go."""
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _own_cgroup_dirs() -> list[Path]:
    """The directories of this process's cgroups (v1 pids/memory, or the v2 unified one)."""
    root = Path("/sys/fs/cgroup")
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    out: list[Path] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ctrls = parts[1].split(",")
        if "pids" in ctrls:
            out.append(root / "pids" / parts[2].lstrip("/"))
        if "memory" in ctrls:
            out.append(root / "memory" / parts[2].lstrip("/"))
        if parts[1] == "":
            out.append(root / parts[2].lstrip("/"))
    return [d for d in out if d.is_dir()]


def clean_leftovers() -> dict[str, int]:
    """Kill and remove the per-run cgroups and run directories whose owning process is known dead.

    Safe to call at any time from any worker: what belongs to a live process, or to a process this one
    cannot check (another host or container), is left alone. Never raises: a leftover that cannot be
    removed is counted in ``failed`` (and logged) and the sweep goes on with the others; the next sweep
    tries it again. Returns the numbers removed.
    """
    removed = {"run_dirs": 0, "cgroups": 0, "failed": 0}
    for parent in _own_cgroup_dirs():
        try:
            children = list(parent.iterdir())
        except OSError:
            continue
        for d in children:
            m = CGROUP_RE.match(d.name)
            try:
                if m and d.is_dir() and token_alive(m["token"]) is False:
                    _kill_cgroup(d)
                    removed["cgroups"] += 1
            except Exception as exc:  # noqa: BLE001 - one bad leftover must not stop the sweep
                log.warning("could not remove cgroup %s: %s", d, exc)
                removed["failed"] += 1
    try:
        root = jobs_root()
        entries = list(root.iterdir())
    except OSError:
        return removed
    for d in entries:
        m = RUN_DIR_RE.match(d.name)
        if m and token_alive(m["token"]) is False:
            if remove_tree(d):
                removed["run_dirs"] += 1
            else:
                removed["failed"] += 1
    return removed


# -- reading what a program wrote ---------------------------------------------------------------------
class OutputRejected(Exception):
    """An output file that is not read: a link, not a regular file, someone else's, or too large."""


def read_job_file(workdir: Path, relpath: str, *, uid: int, cap: int) -> bytes | None:
    """The content of ``workdir/relpath`` as written by the program, or None when it does not exist.

    The program controls everything in its work dir, so nothing is trusted: every path component is
    opened relative to the previous one with ``O_NOFOLLOW`` (a symlink anywhere, e.g. to
    ``/proc/self/environ`` or ``/etc/shadow``, is refused, never followed), the file must be a regular
    file owned by ``uid`` (a hard link to another user's file is refused) and at most ``cap`` bytes; it
    is opened non-blocking, so a FIFO cannot stall the worker.

    Raises
    ------
    OutputRejected
        With the reason, for a file that exists but is not read.
    """
    parts = [p for p in relpath.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise OutputRejected(f"{relpath!r} is not a relative path inside the work dir")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(workdir, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise OutputRejected(f"{part!r} is not a plain directory ({exc.strerror})") from None
            os.close(fd)
            fd = nfd
        try:
            ffd = os.open(parts[-1], flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OutputRejected("it is a symbolic link") from None
            raise OutputRejected(f"it cannot be opened ({exc.strerror})") from None
    finally:
        os.close(fd)
    try:
        st = os.fstat(ffd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputRejected("it is not a regular file")
        if st.st_uid != uid:
            raise OutputRejected(f"it belongs to uid {st.st_uid}, not to the program's uid {uid}")
        if st.st_size > cap:
            raise OutputRejected(f"it is larger than the {cap // 2**20} MB output limit")
        chunks, left = [], cap
        while left > 0:
            chunk = os.read(ffd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(ffd)


# -- staging what the sandbox binds ----------------------------------------------------------------------
# bubblewrap runs as the sandbox uid and resolves every source path itself, so a checkout below a directory
# closed to others (``mktemp -d`` makes 0700 ones; root's home is 0700) cannot be bound directly. A root
# worker therefore first bind-mounts each source onto an empty directory of the (reachable) run directory,
# in a private mount namespace of the child that then becomes bubblewrap: the host never sees those mounts
# and they vanish with the sandbox.
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


def stage_points(rundir: RunDir, sources: list[Path]) -> list[tuple[Path, Path]]:
    """(source, stage) pairs: an empty directory (or file, for a file source) per source in the run dir."""
    base = rundir.path / "mnt"
    os.mkdir(base, 0o755)
    pairs = []
    for k, src in enumerate(sources):
        dst = base / str(k)
        if src.is_dir():
            os.mkdir(dst, 0o755)
        else:
            os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        pairs.append((src, dst))
    return pairs


def make_stager(pairs: list[tuple[Path, Path]]) -> Callable[[], None]:
    """A function for the forked child (before it drops root): a private mount namespace with the binds."""
    encoded = [(os.fsencode(src), os.fsencode(dst)) for src, dst in pairs]

    def fail(what: str) -> None:
        err = ctypes.get_errno()
        raise OSError(err, f"staging the sandbox's mounts: {what}: {os.strerror(err)}")

    def stage() -> None:
        if _libc is None:
            raise OSError(errno.ENOSYS, "staging the sandbox's mounts needs Linux")
        if _libc.unshare(_CLONE_NEWNS) != 0:
            fail("unshare(CLONE_NEWNS)")
        if _libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            fail("making / private")
        for src, dst in encoded:
            if _libc.mount(src, dst, None, _MS_BIND, None) != 0:
                fail(f"bind {os.fsdecode(src)}")

    return stage
