"""Shared fixtures: the real data is read in place, never copied.

The RNA STRAND archive is the one shipped in ``data/`` (what ``make run`` imports); the other real files
(mmCIF entries, ArchiveII, ...) are read from ``../shared/data``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("COMPARNA_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}; set COMPARNA_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(scope="session")
def rnastrand_archive() -> Path:
    return REPO / "data" / "rna_strand_v2.0_bpseq.tar.gz"


@pytest.fixture(scope="session")
def mmcif_dir(shared_data: Path) -> Path:
    return shared_data / "mmcif"
