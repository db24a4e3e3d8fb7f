"""Fixtures used across the suite: real data, all of it in the repository.

RNA STRAND and ArchiveII are read in place from ``data/`` (what ``make run`` imports); the mmCIF entries and
their annotations by other tools ship as ``tests/data/mmcif.tar.gz`` and are unpacked once per session
(``tests/support/fixture_data.py``). Nothing is read from outside the clone.
"""

from __future__ import annotations

import getpass
import re
import tempfile
from pathlib import Path

import pytest

from tests.support import timing_report, xdist_plan
from tests.support.fixture_data import DATA, extract_mmcif

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """Remove, without recursion, the old temporary folders pytest is about to clean up itself.

    The hardening tests run programs that leave 1500 nested directories; if one of those tests fails before
    its own cleanup, pytest's removal of old ``pytest-N`` folders at a later session start (recursive
    ``shutil.rmtree``) raises RecursionError and the whole session errors. Pytest keeps the newest three.
    """
    from predictors.core.removal import remove_tree

    # per-file wall times (var/test-report.json) and the closing wall-time line (issue 39)
    timing_report.register(config)
    # make test's -n 2 --dist loadgroup: files (or xdist_group groups) as units, the slowest first
    xdist_plan.register(config)

    root = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    if config.option.basetemp or not root.is_dir():
        return
    numbered = sorted(
        (int(m.group(1)), p) for p in root.iterdir() if (m := re.fullmatch(r"pytest-(\d+)", p.name))
    )
    stale = [p for n, p in numbered if numbered and n <= numbered[-1][0] - 2]
    for path in [*stale, *root.glob("garbage-*")]:
        # a folder with a lock file belongs to a session still running (pytest's own rule: never removed)
        if path.is_dir() and not path.is_symlink() and not (path / ".lock").exists():
            remove_tree(path)


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
