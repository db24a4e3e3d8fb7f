"""The real files the tests and benchmarks read, shipped in the repository (``tests/data/``).

A clone has nothing beside it, so every real file a test needs is here or under ``data/`` (what ``make run``
imports, read in place). The mmCIF entries and their annotations by other tools are one archive,
``tests/data/mmcif.tar.gz`` (provenance and licence in ``tests/data/README.md``), unpacked once per test
session (or bench run) into a temporary folder.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "data"
#: The repository's own ``data/``: RNA STRAND and ArchiveII, the archives ``make run`` imports.
DATA = REPO / "data"
MMCIF_ARCHIVE = FIXTURES / "mmcif.tar.gz"
#: Checksum of the archive (also in tests/data/README.md; tests/unit/test_fixture_data.py checks both).
MMCIF_SHA256 = "692299e7d9d13bdbaee13b98bfde43f8e5e97e63b06a16a54a1cfa171a25c70f"


def extract_mmcif(dest: Path) -> Path:
    """Unpack the mmCIF fixtures into ``dest/mmcif`` and return that folder.

    Only regular files directly under ``mmcif/`` are written, by their base name, so the archive cannot
    place anything elsewhere; its sha256 is checked first, so a damaged clone fails here with a clear error
    rather than in a test about base pairs.
    """
    digest = hashlib.sha256(MMCIF_ARCHIVE.read_bytes()).hexdigest()
    if digest != MMCIF_SHA256:
        raise RuntimeError(f"{MMCIF_ARCHIVE} has sha256 {digest}, expected {MMCIF_SHA256}")
    out = Path(dest) / "mmcif"
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(MMCIF_ARCHIVE, "r:gz") as tar:
        for member in tar:
            if not member.isfile() or Path(member.name).parent != Path("mmcif"):
                continue
            with tar.extractfile(member) as src, open(out / Path(member.name).name, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return out
