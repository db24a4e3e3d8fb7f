"""The bubblewrap sandbox runner and what a program may see.

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

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from predictors.core.job import JOB_MOUNT, PROGRAM_ROOT, REPO_ROOT, Job
from predictors.core.process import ProcessRunner, decode_wrapped_returncode
from predictors.core.spec import PredictorSpec
from predictors.core.venvs import venvs_dir
from predictors.core.workspace import data_dir, stage_points

#: The uid/gid a sandboxed program runs as when the worker is root. A uid of its own, not ``nobody``:
#: RLIMIT_NPROC counts every process of the uid, so another service running as ``nobody`` would eat into
#: the sandbox's process budget, and leftovers of a run could not be told apart from that service's
#: processes. ``COMPARNA_SANDBOX_UID`` overrides it (the gid follows the uid).
SANDBOX_UID = int(os.environ.get("COMPARNA_SANDBOX_UID", "64901"))
SANDBOX_GID = SANDBOX_UID
#: The repository folders (and single modules) a sandboxed program may import: the wrappers and the pure
#: core they use
#: (``tests/unit/test_sandbox_exposure.py`` checks that every first-party import of a wrapper is here).
#: Parent packages are not exposed (their ``__init__`` would load Celery and settings): inside the
#: sandbox ``comparna``, ``ingest`` and ``predictors`` are namespace packages.
SANDBOX_PACKAGES = ("predictors/programs", "comparna/rna", "predictors/core/venvs.py")
#: What a program may see of the host's /etc: the dynamic linker's cache, the ``alternatives`` links of
#: /usr/bin and the time zone. Users and groups are replaced by a two-line passwd/group of our own.
#: Size of the sandbox's ``/dev/shm`` (see :class:`SandboxRunner`).
DEFAULT_SHM_MB = 16
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf")


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


class SandboxRunner(ProcessRunner):
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
    shm_size_mb : int
        Size of ``/dev/shm`` (POSIX shared memory and semaphores, e.g. of ``multiprocessing``). bubblewrap's
        ``--dev`` makes ``/dev`` a tmpfs of no set size; it is remounted read-only and ``/dev/shm`` gets a
        tmpfs of this size, so no writable place of the sandbox is unbounded (issue 26).
    """

    name = "sandbox-bwrap"
    isolation = "bubblewrap"
    uses_info_fd = True

    def __init__(
        self,
        *,
        extra_ro_binds: tuple[str, ...] = (),
        tmp_size_mb: int = 256,
        shm_size_mb: int = DEFAULT_SHM_MB,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.extra_ro_binds = tuple(extra_ro_binds)
        self.tmp_size_mb = tmp_size_mb
        self.shm_size_mb = shm_size_mb

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
        shm_size = str(self.shm_size_mb * 2**20)
        cmd += ["--proc", "/proc", "--dev", "/dev", "--size", shm_size, "--tmpfs", "/dev/shm"]
        cmd += ["--remount-ro", "/dev", "--size", tmp_size, "--tmpfs", "/tmp"]
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
            "dev_shm_mb": self.shm_size_mb,
        }

    def _decode_returncode(self, rc: int) -> tuple[int | None, int | None]:
        return decode_wrapped_returncode(rc)
