"""What `make run` needs ships in data/ with its provenance, licence and checksums (issue 11).

A user who clones the repository has nothing beside the clone: ``run.sh`` and the settings read ``data/``,
every archive there is listed with its SHA-256 in ``data/SHA256SUMS`` and ``data/README.md``, and the folder
stays under 50 MB compressed.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"
LIMIT_BYTES = 50 * 2**20


def archives() -> list[Path]:
    """Every shipped file, in sub-folders too (ArchiveII), except README, checksums and licence texts."""
    return sorted(
        p for p in DATA.rglob("*")
        if p.is_file() and p.name not in ("README.md", "SHA256SUMS", "COPYING")
        and not p.name.startswith("LICENSE")
    )


def test_pdb_derived_sets_ship_their_licence_texts():
    for name, first in (("LICENSE.rna3db_2d", "MIT License"), ("LICENSE.rnabench", "Apache License"),
                        ("LICENSE.rnaformer", "Apache License")):
        text = (DATA / "pdb_derived" / name).read_text()
        assert first in text and "without" in text.lower(), name


def rel(path: Path) -> str:
    return path.relative_to(DATA).as_posix()


def test_every_archive_is_listed_with_its_checksum_and_provenance():
    text = (DATA / "SHA256SUMS").read_text()
    lines = [line.split(maxsplit=1) for line in text.splitlines() if line.strip()]
    sums = {name: digest for digest, name in lines}
    readme = (DATA / "README.md").read_text()
    found = archives()
    assert sorted(rel(p) for p in found) == sorted(sums), "data/SHA256SUMS must list exactly the archives"
    for path in found:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert sums[rel(path)] == digest, rel(path)
        section = readme[readme.index(f"## {rel(path)} ") :]
        section = section[: section.find("\n## ", 3) if "\n## " in section[3:] else len(section)]
        assert digest in section, f"data/README.md: no sha256 for {path.name}"
        for heading in ("**Source:**", "**Licence:**", "**Cite:**"):
            assert heading in section, f"data/README.md: {path.name} has no {heading}"
    assert sum(p.stat().st_size for p in found) <= LIMIT_BYTES


def test_the_archives_are_in_the_repository_not_only_on_this_machine():
    tracked = subprocess.run(
        ["git", "ls-files", "data"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {f"data/{rel(p)}" for p in archives()} | {"data/README.md", "data/SHA256SUMS"} <= set(tracked)


def test_run_and_settings_read_data_not_shared():
    run = (REPO / "scripts" / "run.sh").read_text()
    assert "../" + "shared" not in run and "data/rna_strand_v2.0_bpseq.tar.gz" in run
    assert "sha256sum --check" in run
    settings = (REPO / "comparna" / "settings.py").read_text()
    assert 'BASE_DIR / "data" / "rna_strand_v2.0_bpseq.tar.gz"' in settings
    compose = (REPO / "docker-compose.yml").read_text()
    assert not re.search(r"\.\./shared", compose)
