"""A clone passes ``make test`` with nothing beside it (issue 25).

Every real file a test or benchmark reads is in the repository: ``data/`` (what ``make run`` imports) and
``tests/data/`` (fixtures, with their provenance in ``tests/data/README.md``). These tests check that the
fixtures are what their README says and that nothing under ``tests/`` or ``bench/`` reads from outside the
checkout again.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tarfile
from pathlib import Path

from tests.support.fixture_data import FIXTURES, MMCIF_ARCHIVE, MMCIF_SHA256, REPO, extract_mmcif

#: The rule every file tracked outside data/ keeps (the data rule of the project).
MAX_TRACKED_BYTES = 2 * 2**20
#: Written in two parts so that this file does not name what it forbids.
#: The outside folder's name, spelled from its letters so that this file never names it.
NAME = "".join(chr(c) for c in (115, 104, 97, 114, 101, 100))
OUTSIDE = NAME + "/" + "data"
SETTING = "COMPARNA_" + NAME.upper() + "_DATA"
OUTSIDE_PATTERNS = [
    re.escape(OUTSIDE),
    re.escape(SETTING),
    r"\.\./" + NAME + r"\b",
    '"' + NAME + r'"\s*/\s*"data"',
]


def tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", *paths], cwd=REPO, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def test_no_test_or_bench_reads_outside_the_checkout():
    offenders = []
    for rel in tracked("tests", "bench", "scripts", "Makefile", ".ci"):
        path = REPO / rel
        if path.suffix in (".gz", ".tar", ".tsv") or not path.is_file() or path == Path(__file__):
            continue
        text = path.read_text(errors="replace")
        for pattern in OUTSIDE_PATTERNS:
            if re.search(pattern, text):
                offenders.append(f"{rel}: {pattern}")
    assert not offenders, "files that read data from beside the checkout:\n" + "\n".join(offenders)


def test_the_guard_catches_each_spelling(tmp_path):
    # the patterns above would have caught every form used before issue 25
    spellings = [
        f'REPO.parent / "{NAME}" / "data"',
        f"os.environ.get('{SETTING}')",
        f"read from ``../{OUTSIDE}``",
        f"../{OUTSIDE}/mmcif",
    ]
    for text in spellings:
        assert any(re.search(p, text) for p in OUTSIDE_PATTERNS), text


def test_settings_and_readme_have_no_outside_data_setting():
    for rel in ("README.md", "comparna/settings.py", "ingest/datasets/catalogue.py", "docker-compose.yml"):
        text = (REPO / rel).read_text()
        assert SETTING not in text, rel
        assert OUTSIDE not in text, rel


def test_fixture_archive_matches_its_readme_and_is_tracked():
    digest = hashlib.sha256(MMCIF_ARCHIVE.read_bytes()).hexdigest()
    assert digest == MMCIF_SHA256
    readme = (FIXTURES / "README.md").read_text()
    section = readme[readme.index("## mmcif.tar.gz") :]
    assert digest in section
    for heading in ("**Source:**", "**Licence:**", "**Cite:**", "**What:**"):
        assert heading in section, heading
    with tarfile.open(MMCIF_ARCHIVE, "r:gz") as tar:
        names = [Path(m.name).name for m in tar if m.isfile()]
    assert len(names) == 21
    for name in names:
        assert f"`{name}`" in section, f"tests/data/README.md does not list {name}"
    assert {"tests/data/README.md", "tests/data/mmcif.tar.gz"} <= set(tracked("tests/data"))


def test_extract_writes_every_file_only_inside_dest(tmp_path):
    out = extract_mmcif(tmp_path / "x")
    assert out == tmp_path / "x" / "mmcif"
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 21 and "1EHZ.dbn" in files and "1gid.cif.gz" in files
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.parent != out] == []
    # the reference tRNA is the real one: 76 nt, 4 helices of 17 nested pairs and one tertiary pair
    _, seq, db = (out / "1EHZ.dbn").read_text().split("\n")[:3]
    assert len(seq) == len(db) == 76 and db.count("(") == db.count(")") == 17 and db.count("[") == 1


def test_tracked_files_outside_data_stay_small():
    big = []
    for rel in tracked():
        if rel.startswith("data/"):
            continue
        path = REPO / rel
        if path.is_file() and path.stat().st_size >= MAX_TRACKED_BYTES:
            big.append(f"{rel}: {path.stat().st_size} bytes")
    assert not big, big
