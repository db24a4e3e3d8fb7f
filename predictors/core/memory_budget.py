"""One memory budget per worker host (issue 36): the memory limits of the runs side by side add up to at
most the host's ceiling (:func:`predictors.core.limits.memory_ceiling_mb`).

Two rules, one for registration and one for run time:

- **the per-run share** (:func:`predictors.core.limits.run_share_mb`): the ceiling divided by the runs a
  host runs at once (``COMPARNA_PREDICT_CONCURRENCY``, the concurrency of the predict worker, 2 by default
  as in ``make run`` and docker-compose). A method may not ask for more (the registration form refuses it),
  and a run never gets more (a spec stored earlier, or registered on a bigger host, is clamped);
- **the ledger**: every run reserves its limit in a host-local ledger (one file per run under the jobs root,
  named after the process, taken under an exclusive lock) before it starts and frees it when it ends. A run
  whose limit does not fit beside the live reservations waits for room, and is refused (an infrastructure
  error, run again later) if none comes: even more runs than configured (two workers on one host) never
  hold more than the ceiling together. Reservations of dead processes are dropped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from predictors.core.limits import memory_ceiling_mb, run_share_mb, runs_per_host  # noqa: F401 - re-exported
from predictors.core.workspace import jobs_root, make_owned_dir, process_token, token_alive

#: How long a run waits for room in the budget before it is refused.
WAIT_ENV = "COMPARNA_MEMORY_WAIT_S"
DEFAULT_WAIT_S = 120.0


class MemoryBudgetExceeded(OSError):
    """No room in the host's memory budget for this run (recorded as an infrastructure error)."""


def ledger_dir() -> Path:
    path = jobs_root() / "memory-ledger"
    make_owned_dir(path, 0o700)
    return path


def _live_reservations(ledger: Path) -> int:
    """The MB reserved by live runs; entries of dead processes (or of an earlier boot) are removed. An
    entry of another pid namespace (a container sharing the directory) is counted: it cannot be checked."""
    total = 0
    boot = process_token().split(".", 1)[0]
    for entry in ledger.iterdir():
        if entry.name == ".lock":
            continue
        token = entry.name.rsplit(".", 1)[0]
        # dead: its process ended, or it was made before this boot (a host-local ledger outlived a reboot)
        if token_alive(token) is False or not token.startswith(boot + "."):
            with contextlib.suppress(OSError):
                entry.unlink()
            continue
        with contextlib.suppress(OSError, ValueError):
            total += int(entry.read_text().strip() or 0)
    return total


@contextlib.contextmanager
def _locked(ledger: Path) -> Iterator[None]:
    fd = os.open(ledger / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _try_reserve(ledger: Path, memory_mb: int, ceiling: int) -> Path | None:
    with _locked(ledger):
        if _live_reservations(ledger) + memory_mb > ceiling:
            return None
        entry = ledger / f"{process_token()}.{uuid.uuid4().hex[:12]}"
        fd = os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(str(memory_mb))
        return entry


def reserved_mb() -> int:
    """The MB the live runs of this host hold now."""
    ledger = ledger_dir()
    with _locked(ledger):
        return _live_reservations(ledger)


@contextlib.contextmanager
def reserve_memory(memory_mb: int, *, wait_s: float | None = None) -> Iterator[int]:
    """Hold ``memory_mb`` of the host's budget while the block runs; yields it.

    Raises
    ------
    MemoryBudgetExceeded
        When the live reservations leave no room for it within ``wait_s`` (``COMPARNA_MEMORY_WAIT_S``).
    """
    ceiling = memory_ceiling_mb()
    if ceiling is None:  # the host's memory cannot be read: nothing to share
        yield memory_mb
        return
    if wait_s is None:
        configured = os.environ.get(WAIT_ENV, "").strip()
        wait_s = float(configured) if configured.replace(".", "", 1).isdigit() else DEFAULT_WAIT_S
    ledger = ledger_dir()
    deadline = time.monotonic() + wait_s
    while (entry := _try_reserve(ledger, memory_mb, ceiling)) is None:
        if time.monotonic() >= deadline:
            raise MemoryBudgetExceeded(
                f"no room in this host's memory budget: runs side by side hold {reserved_mb()} of "
                f"{ceiling} MB and this run needs {memory_mb} MB"
            )
        time.sleep(0.2)
    try:
        yield memory_mb
    finally:
        with contextlib.suppress(OSError):
            entry.unlink()
