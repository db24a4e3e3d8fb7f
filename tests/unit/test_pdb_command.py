"""``manage.py annotate`` through call_command and as a real subprocess."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

REPO = Path(__file__).resolve().parents[2]


def _rnaview_canonical(mmcif_dir) -> set[tuple[int, int]]:
    """RNAView's cWW Watson-Crick/wobble pairs of 1A1T chain B, renumbered (author 201 -> 1)."""
    data = json.loads((mmcif_dir / "1A1T_1_B-rnaview.json").read_text())
    pairs = set()
    for p in data["base_pairs"]:
        bases = {p["nt1"]["auth"]["name"], p["nt2"]["auth"]["name"]}
        if p["lw"] == "cWW" and bases in ({"A", "U"}, {"G", "C"}, {"G", "U"}):
            i, j = sorted((p["nt1"]["auth"]["number"] - 200, p["nt2"]["auth"]["number"] - 200))
            pairs.add((i, j))
    return pairs


def test_json_output_shape_and_content(mmcif_dir):
    out = StringIO()
    call_command("annotate", str(mmcif_dir / "1A1T_1_B.cif"), "--json", stdout=out)
    data = json.loads(out.getvalue())
    (chain,) = data["chains"]
    keys = {"chain", "sequence", "author_numbers", "standard_pairs", "extended_pairs", "inter_chain_pairs",
            "incomplete_bases", "excluded"}
    assert set(chain) == keys
    assert set(data) == {"chains", "inter_chain_pairs", "single_chain_rule"}
    assert chain["inter_chain_pairs"] == [] and chain["incomplete_bases"] == []
    assert chain["chain"] == "B" and chain["sequence"] == "GGACUAGCGGAGGCUAGUCC"
    assert chain["author_numbers"] == [str(n) for n in range(201, 221)]
    assert all(lw == "cWW" for _, _, lw in chain["standard_pairs"])
    ours = {(i, j) for i, j, _ in chain["standard_pairs"]}
    reference = _rnaview_canonical(mmcif_dir)
    assert ours <= reference and len(ours) >= len(reference) - 1  # RNAView's bifurcated U-G extra
    assert "too short" in chain["excluded"]


def test_text_output(mmcif_dir):
    out = StringIO()
    call_command("annotate", str(mmcif_dir / "1ehz-assembly-1.cif"), stdout=out)
    text = out.getvalue()
    assert "chain A  76 nt  target" in text
    assert "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA" in text
    assert "1-72:cWW" in text and "76=76" in text


@pytest.mark.parametrize(
    "content", [b"", b"not a structure\n", gzip.compress(b"data_x\nloop_\n", mtime=0)[:-4]]  # fixed id
)
def test_malformed_input_is_a_command_error(tmp_path, content):
    path = tmp_path / "bad.cif.gz"
    path.write_bytes(content)
    with pytest.raises(CommandError, match="bad.cif.gz"):
        call_command("annotate", str(path), stdout=StringIO())


@pytest.mark.slow
def test_subprocess_gzipped_and_error(mmcif_dir, tmp_path):
    run = subprocess.run(
        [sys.executable, "manage.py", "annotate", "--json", str(mmcif_dir / "1gid.cif.gz")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    chains = json.loads(run.stdout)["chains"]
    summary = [(c["chain"], len(c["sequence"]), c["excluded"]) for c in chains]
    assert summary == [("A", 158, None), ("B", 158, None)]
    assert all(len(c["author_numbers"]) == 158 and c["standard_pairs"] for c in chains)

    broken = tmp_path / "broken.cif"
    broken.write_bytes((mmcif_dir / "1A1T_1_B.cif").read_bytes()[:3000])
    run = subprocess.run([sys.executable, "manage.py", "annotate", str(broken)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "CommandError" in run.stderr and "malformed" in run.stderr
    assert "Traceback" not in run.stderr
