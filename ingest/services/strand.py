"""RNA STRAND: an alias of the generic import for its declaration (``ingest.datasets.catalogue.RNASTRAND``).

Kept so that ``import_rnastrand`` callers (commands, tasks, benchmarks, tests) go on working; the rules,
subsets and stored rows are the declaration's (identical to the RNA STRAND import before issue 15).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from comparna.models import Dataset, ImportRun
from ingest.datasets.catalogue import RNASTRAND
from ingest.services.datasets import ensure_dataset, import_dataset

__all__ = ["RNASTRAND_SLUG", "ensure_rnastrand_dataset", "import_rnastrand"]

RNASTRAND_SLUG = RNASTRAND.name


def ensure_rnastrand_dataset() -> Dataset:
    """The RNA STRAND dataset row and its subsets."""
    return ensure_dataset(RNASTRAND)


def import_rnastrand(
    *, path: Path | None = None, progress: Callable[[str, int, int], None] | None = None
) -> ImportRun:
    """Import RNA STRAND from a tarball or directory of BPSEQ files (the declared archive by default)."""
    return import_dataset(name=RNASTRAND.name, path=path, progress=progress)
