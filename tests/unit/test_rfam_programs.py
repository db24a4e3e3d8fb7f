"""The comparative predictor programs (RNAalifold modes, CM projection) as subprocesses on a real family."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.rfam.inputs import align_to_family, twenty_input
from ingest.rfam.library import TESTSUITE_DIR, build_library

REPO = Path(__file__).resolve().parents[2]
TRNA_PHE = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
# textbook cloverleaf of yeast tRNA-Phe (Kim et al., Science 1974)
CLOVERLEAF = (
    {(1 + k, 72 - k) for k in range(7)}
    | {(10 + k, 25 - k) for k in range(4)}
    | {(27 + k, 43 - k) for k in range(5)}
    | {(49 + k, 65 - k) for k in range(5)}
)

pytestmark = pytest.mark.skipif(not TESTSUITE_DIR.is_dir(), reason="infernal-doc is not installed")


@pytest.fixture(scope="module")
def trna_alignment(tmp_path_factory):
    """The cmalign alignment of the (20) input of yeast tRNA-Phe, written to a Stockholm file."""
    tmp = tmp_path_factory.mktemp("rfam")
    library = build_library(TESTSUITE_DIR, tmp / "lib")
    made = twenty_input(
        TRNA_PHE, library.read_seed("RF00005"), accession="RF00005", rfam_version=library.version,
        random_seed=2013, query_name="tRNA-Phe",
    )  # fmt: skip
    aligned = align_to_family(made, "RF00005", library)
    path = tmp / "trna20.sto"
    path.write_text(aligned.to_stockholm())
    return path, aligned


def run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"predictors.programs.{module}", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def pairs_of(out: dict) -> set[tuple[int, int]]:
    return {(i, j) for i, j in out["pairs"]}


def test_alifold_mfe_finds_the_cloverleaf(trna_alignment):
    path, aligned = trna_alignment
    proc = run("alifold", str(path), "--query", "tRNA-Phe")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["length"] == len(TRNA_PHE) and out["n_sequences"] == 20
    assert len(out["consensus"]) == aligned.alignment.width
    pairs = pairs_of(out)
    assert all(1 <= i < j <= len(TRNA_PHE) for i, j in pairs)
    assert len(pairs & CLOVERLEAF) >= 17  # comparative folding of 20 tRNAs recovers the cloverleaf
    assert "probabilities" not in out


@pytest.mark.parametrize("mode", ["mea", "centroid"])
def test_alifold_probability_modes(trna_alignment, mode):
    path, _ = trna_alignment
    proc = run("alifold", str(path), "--query", "tRNA-Phe", "--mode", mode)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    probs = {(i, j): p for i, j, p in out["probabilities"]}
    assert probs and all(0 < p <= 1.0 + 1e-9 and 1 <= i < j <= len(TRNA_PHE) for (i, j), p in probs.items())
    pairs = pairs_of(out)
    assert len(pairs & CLOVERLEAF) >= 17
    if mode == "centroid":  # the centroid is exactly the pairs with probability > 1/2 (Ding et al. 2005)
        assert pairs == {ij for ij, p in probs.items() if p > 0.5}
    else:
        assert pairs <= set(probs)


def test_cmproject_is_the_model_consensus_on_the_query(trna_alignment):
    path, _ = trna_alignment
    proc = run("cmproject", str(path), "--query", "tRNA-Phe")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["length"] == len(TRNA_PHE)
    assert pairs_of(out) == CLOVERLEAF


def test_programs_refuse_an_unknown_query(trna_alignment):
    path, _ = trna_alignment
    for module in ("alifold", "cmproject"):
        proc = run(module, str(path), "--query", "not-there")
        assert proc.returncode != 0 and "not-there" in proc.stderr
