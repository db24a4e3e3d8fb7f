"""Removing a run's directory, whatever its program left in it (issue 26).

A program controls its work dir: 1500 nested directories make ``shutil.rmtree`` (recursive in Python 3.11)
raise RecursionError, which left the run "running", its directory on disk and every later sweep failing.
:func:`remove_tree` walks without recursion and never raises; what it cannot remove is logged and left to
the next sweep (:func:`predictors.core.workspace.clean_leftovers`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import stat
import time
from pathlib import Path

log = logging.getLogger(__name__)
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux/glibc
    _libc = None

#: Longest a removal of one tree may take (a program could leave millions of files; the rest is left to
#: the next sweep, which starts over).
REMOVE_DEADLINE_S = 120.0
_MNT_DETACH = 2
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _detach_mounts(path: Path) -> None:
    """Lazily unmount whatever is mounted at or below ``path`` (a run's job-dir tmpfs), deepest first."""
    if _libc is None:
        return
    prefix = os.fsencode(path)
    try:
        with open("/proc/self/mounts", "rb") as f:
            points = [line.split()[1] for line in f]
    except OSError:
        return
    # /proc/self/mounts escapes blanks as octal (\040); run dir paths are ours and have none.
    inside = [m for m in points if m == prefix or m.startswith(prefix + b"/")]
    for mount_point in sorted(set(inside), key=len, reverse=True):
        _libc.umount2(mount_point, _MNT_DETACH)


def remove_tree(path: Path, *, deadline_s: float = REMOVE_DEADLINE_S) -> bool:
    """Remove ``path`` and everything below it; True when it is gone. Never raises.

    A program controls its work dir: 1500 nested directories make ``shutil.rmtree`` (recursive in Python
    3.11) raise RecursionError, and a path through them is longer than PATH_MAX. So the tree is walked
    without recursion and without long paths: one directory descriptor at a time, down into the first
    non-empty subdirectory, back up through ``..`` once a directory is empty (nothing runs in the tree any
    more: the run's processes are dead). Symbolic links are removed, never followed; a directory the
    program made unreadable is opened up first (a worker that is not root cannot otherwise enter it).
    Mounts below ``path`` (the job-dir tmpfs) are detached first. Whatever fails is logged and left for
    the next sweep of :func:`clean_leftovers`, never raised into the run or the sweep.
    """
    try:
        return _remove_tree(Path(path), time.monotonic() + deadline_s)
    except Exception as exc:  # noqa: BLE001 - a removal must never stop a run, a worker or a sweep
        log.warning("could not remove %s: %s: %s", path, type(exc).__name__, exc)
        return False


def _remove_tree(path: Path, deadline: float) -> bool:
    _detach_mounts(path)
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return True
        top = fd = os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        return True
    # The names still to remove of every directory above the current one (not their descriptors: a deep
    # tree would exhaust RLIMIT_NOFILE), and the name of the directory descended into.
    stack: list[tuple[list[tuple[str, bool]], str]] = []
    try:
        pending = _entries(fd)
        while True:
            if time.monotonic() > deadline:
                log.warning("removing %s took too long; the rest is left to the next sweep", path)
                return False
            child = None
            while pending and child is None:
                name, is_dir = pending.pop()
                child = _remove_entry(fd, name, is_dir)
                if child is not None:
                    stack.append((pending, name))
            if child is not None:
                if fd != top:
                    os.close(fd)
                fd, pending = child, _entries(child)
                continue
            if not stack:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)  # nothing runs in the tree: ".." is the parent
            os.close(fd)
            fd = parent
            pending, name = stack.pop()
            with contextlib.suppress(FileNotFoundError):  # another worker's sweep may remove it too
                os.rmdir(name, dir_fd=fd)  # emptied
    finally:
        if fd != top:
            os.close(fd)
        os.close(top)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)
    return True


def _entries(fd: int) -> list[tuple[str, bool]]:
    with os.scandir(fd) as entries:
        return [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]


def _remove_entry(fd: int, name: str, is_dir: bool) -> int | None:
    """Remove ``name`` of the directory ``fd`` when it is a file or an empty directory; for a non-empty
    directory return a descriptor of it (to descend into)."""
    if not is_dir:
        try:
            os.unlink(name, dir_fd=fd)
            return None
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            pass
    try:
        os.rmdir(name, dir_fd=fd)
        return None
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None  # removed meanwhile (another worker's sweep)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=fd)  # ours, made unreadable by the program
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
