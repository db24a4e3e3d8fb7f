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


@pytest.fixture(scope="session")
def owner_image_archive(tmp_path_factory) -> Path:
    """A method owner's image archive built from the registry-free base image (tests/support/owner_image.py),
    once per session; skipped where Podman or the base image is missing."""
    from predictors.core.container import ContainerRunner
    from tests.support.owner_image import BASE_IMAGE, build_owner_image_archive

    if not (ContainerRunner.available() and ContainerRunner.image_exists(BASE_IMAGE)):
        pytest.skip(f"podman or the base image {BASE_IMAGE} is not available (scripts/install_predictors.sh)")
    return build_owner_image_archive(tmp_path_factory.mktemp("owner-image") / "owner-image.tar")
