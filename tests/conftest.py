"""Fixtures used across the suite: real data, all of it in the repository.

RNA STRAND and ArchiveII are read in place from ``data/`` (what ``make run`` imports); the mmCIF entries and
their annotations by other tools ship as ``tests/data/mmcif.tar.gz`` and are unpacked once per session
(``tests/support/fixture_data.py``). Nothing is read from outside the clone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fixture_data import DATA, extract_mmcif

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_data() -> Path:
    """The repository's ``data/`` folder (RNA STRAND, ArchiveII)."""
    return DATA


@pytest.fixture(scope="session")
def rnastrand_archive() -> Path:
    return REPO / "data" / "rna_strand_v2.0_bpseq.tar.gz"


@pytest.fixture(scope="session")
def mmcif_dir(tmp_path_factory) -> Path:
    """The real mmCIF entries and reference annotations, unpacked from ``tests/data/mmcif.tar.gz``."""
    return extract_mmcif(tmp_path_factory.mktemp("fixtures"))


@pytest.fixture(scope="session")
def owner_image_archive(tmp_path_factory) -> Path:
    """A method owner's image archive built from the registry-free base image (tests/support/owner_image.py),
    once per session; skipped where Podman or the base image is missing."""
    from predictors.core.container import ContainerRunner
    from tests.support.owner_image import BASE_IMAGE, build_owner_image_archive

    if not (ContainerRunner.available() and ContainerRunner.image_exists(BASE_IMAGE)):
        pytest.skip(f"podman or the base image {BASE_IMAGE} is not available (scripts/install_predictors.sh)")
    return build_owner_image_archive(tmp_path_factory.mktemp("owner-image") / "owner-image.tar")
