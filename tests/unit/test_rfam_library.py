"""The Rfam library assembled from Debian's infernal-doc testsuite (real Rfam models and seeds)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from Bio import AlignIO

from ingest.rfam.library import (
    TESTSUITE_DIR,
    RfamLibraryError,
    build_library,
    index_release,
    load_library,
    resolve_library,
)

pytestmark = pytest.mark.skipif(not TESTSUITE_DIR.is_dir(), reason="infernal-doc is not installed")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return build_library(TESTSUITE_DIR, tmp_path_factory.mktemp("rfam") / "lib")


def cmstat_rows(cm: Path) -> list[list[str]]:
    out = subprocess.run(["cmstat", str(cm)], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]


def test_library_holds_the_single_model_families_with_accessions(library):
    by_id = {f.id: f for f in library.families.values()}
    assert by_id["tRNA"].accession == "RF00005"
    assert by_id["Vault"].accession == "RF00006"
    assert by_id["Plant_SRP"].accession == "RF01855"
    assert by_id["snR75"].accession == "RF01185"
    assert by_id["tRNA-Sec"].accession == "RF01852"
    # models without ACC get the documented derived accession
    assert by_id["rnaseP-eubact"].accession == "TS_rnaseP-eubact"
    assert by_id["srp-euk"].accession == "TS_srp-euk"
    assert "tRNA1415G" not in by_id  # a second tRNA model, excluded on purpose
    # cmstat (Infernal's own reader) sees the same accessions in the pressed database
    rows = cmstat_rows(library.cm_path)
    assert {(r[1], r[2]) for r in rows} == {(f.id, f.accession) for f in library.families.values()}


def test_database_is_pressed_and_models_fetchable(library, tmp_path):
    for suffix in (".i1m", ".i1i", ".i1f", ".i1p"):
        assert Path(str(library.cm_path) + suffix).is_file()
    cm = library.fetch_cm("TS_rnaseP-eubact", tmp_path / "one.cm")
    assert [r[1] for r in cmstat_rows(cm)] == ["rnaseP-eubact"]


def test_seeds_match_models_and_read_independently(library):
    # Biopython's Stockholm parser reads the assembled seed file; counts match the models' NSEQ
    alignments = list(AlignIO.parse(str(library.seed_path), "stockholm"))
    with_seed = [f for f in library.families.values() if f.has_seed]
    assert len(alignments) == len(with_seed)
    assert sorted(len(a) for a in alignments) == sorted(f.nseq for f in with_seed)
    trna = library.read_seed("RF00005")
    assert trna.accession == "RF00005" and trna.identifier == "tRNA"
    assert len(trna.names) == 967 and trna.ss_cons is not None
    assert library.read_seed("tRNA-Sec") is None  # model without a seed in the testsuite


def test_version_is_a_content_checksum(library, tmp_path):
    assert library.version.startswith("infernal-doc testsuite (INFERNAL 1.1")
    again = build_library(TESTSUITE_DIR, tmp_path / "again")
    assert again.version == library.version
    fewer = build_library(TESTSUITE_DIR, tmp_path / "fewer", exclude=frozenset({"tRNA1415G", "Vault"}))
    assert fewer.version != library.version
    assert "RF00006" not in fewer.families


def test_multi_model_files_are_not_used(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(TESTSUITE_DIR / "4.c.cm", src)
    with pytest.raises(RfamLibraryError, match="no single-model"):
        build_library(src, tmp_path / "lib")


def test_resolve_library_builds_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPARNA_RFAM_LIBRARY", str(tmp_path / "envlib"))
    lib = resolve_library(None)
    assert lib.root == tmp_path / "envlib" and "RF00005" in lib.families
    assert load_library(tmp_path / "envlib").version == lib.version
    with pytest.raises(RfamLibraryError):
        resolve_library(tmp_path / "absent", build_missing=False)


def test_index_release_prepares_a_downloaded_release(tmp_path):
    # the layout of an Rfam FTP release: Rfam.cm and Rfam.seed, not pressed
    release = tmp_path / "release"
    release.mkdir()
    shutil.copy(TESTSUITE_DIR / "tRNA.c.cm", release / "Rfam.cm")
    shutil.copy(TESTSUITE_DIR / "Vault.sto", release / "Rfam.seed")
    lib = index_release(release, "Rfam test release")
    assert lib.version == "Rfam test release"
    assert set(lib.families) == {"RF00005"}
    assert not lib.families["RF00005"].has_seed  # the seed file holds only Vault
    assert Path(str(lib.cm_path) + ".i1m").is_file()
    with (release / "Rfam.seed").open("a") as fh:
        fh.write((TESTSUITE_DIR / "tRNA.sto").read_text())
    lib = index_release(release, "Rfam test release 2")
    assert len(lib.read_seed("RF00005").names) == lib.families["RF00005"].nseq == 967


def test_build_rfam_library_command(tmp_path):
    from django.core.management import call_command

    out = io.StringIO()
    call_command("build_rfam_library", str(TESTSUITE_DIR), str(tmp_path / "lib"), stdout=out)
    text = out.getvalue()
    assert "RF00005" in text and "TS_srp-euk" in text and "infernal-doc testsuite" in text
    assert load_library(tmp_path / "lib").families["RF00005"].nseq == 967
