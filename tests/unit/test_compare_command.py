"""The ``compare`` management command, through call_command and once as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

REPO = Path(__file__).resolve().parents[2]
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").is_dir() else sys.executable
KEYS = {
    "tp",
    "fn",
    "fp",
    "fp_inconsistent",
    "fp_contradicting",
    "fp_compatible",
    "tn",
    "sensitivity",
    "ppv",
    "mcc",
    "f1",
    "wl",
}
SEQ = "GGGGGAAAACCCCCAAAAAA"
REF = "(((((....)))))......"
PRED = "......(((((....)))))"


def run(*args: str) -> str:
    out = StringIO()
    call_command("compare", *args, stdout=out)
    return out.getvalue()


def run_json(*args: str) -> dict:
    return json.loads(run(*args, "--json"))


def test_published_check_structures():
    r = run_json("--sequence", SEQ, "--reference", REF, "--prediction", PRED)
    assert KEYS <= r.keys()
    assert r["wl"] == pytest.approx(0.25) and r["f1"] == 0.0
    # by hand: 5 FN; of the FPs (7,20) (8,19) (9,18) (10,17) (11,16), the last two touch bases 10, 11
    # paired in R (inconsistent), the first three cross (5,10) (contradicting)
    assert (r["tp"], r["fn"], r["fp"], r["fp_inconsistent"], r["fp_contradicting"]) == (0, 5, 5, 2, 3)
    assert r["tn"] == 20 * 19 // 2 - 10 and r["slip"] is False


def test_files_of_every_format(tmp_path):
    (tmp_path / "r.bpseq").write_text("# from a test\n1 g 4\n2 A 0\n3 A 0\n4 c 1\n5 A 0\n6 U 0\n")
    (tmp_path / "p.ct").write_text(
        "6  ENERGY = -1.0  p\n"
        + "".join(
            f"{i} {b} {i - 1} {i + 1} {q} {i}\n"
            for i, b, q in zip(range(1, 7), "GAACAU", (4, 0, 6, 1, 0, 3), strict=True)
        )
    )
    (tmp_path / "p.json").write_text(json.dumps({"pairs": [[4, 1], [3, 6], [1, 6]]}))
    (tmp_path / "q.json").write_text(json.dumps([[1, 4], [3, 6]]))
    r = run_json("--reference", str(tmp_path / "r.bpseq"), "--prediction", str(tmp_path / "p.ct"))
    assert (r["tp"], r["fp"], r["fp_contradicting"], r["length"]) == (1, 1, 1, 6)
    # the sequence comes from the BPSEQ file, and a dot-bracket prediction uses its length
    r = run_json("--reference", str(tmp_path / "r.bpseq"), "--prediction", "(..)..")
    assert r["mcc"] == 1.0 and r["wl"] == 1.0
    r = run_json("--sequence", "GAACAU", "--reference", "(..)..", "--prediction", str(tmp_path / "p.json"))
    # (1,6) makes multiplets at 1 and 6: inconsistent (1 is paired in R); (3,6) crosses (1,4)
    assert (r["tp"], r["fp"], r["fp_inconsistent"], r["fp_contradicting"]) == (1, 2, 1, 1)
    r = run_json("--sequence", "GAACAU", "--reference", "(..)..", "--prediction", str(tmp_path / "q.json"))
    assert (r["tp"], r["fp_contradicting"]) == (1, 1)


def test_slip_and_table_output():
    seq = "GGGAAAAAACCC"
    r = run_json("--sequence", seq, "--reference", "(((......)))", "--prediction", ".(((.....)))", "--slip")
    assert r["slip"] is True and r["sensitivity"] == 1.0
    table = run("--sequence", seq, "--reference", "(((......)))", "--prediction", ".(((.....)))")
    assert "sensitivity" in table and "mcc" in table and "{" not in table


@pytest.mark.parametrize(
    "args,message",
    [
        (["--sequence", "ACGUA", "--reference", "((.))", "--prediction", "(...)."], "length 6"),
        (["--sequence", "ACGUA", "--reference", "((.)", "--prediction", "....."], "position 1"),
        (
            ["--sequence", "ACGUA", "--reference", "((.))", "--prediction", "no/such/file.bpseq"],
            "does not exist",
        ),
        (["--sequence", "AC GU", "--reference", "(..)", "--prediction", "...."], "letters"),
        (["--reference", "((.))", "--prediction", "....."], "--sequence is required"),
    ],
)
def test_errors_are_clear_command_errors(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_malformed_file_names_line(tmp_path):
    bad = tmp_path / "bad.bpseq"
    bad.write_text("1 G 3\n2 A 0\n3 C 0\n")
    with pytest.raises(CommandError, match="line 1"):
        run("--reference", str(bad), "--prediction", "...")
    other = tmp_path / "r.bpseq"
    other.write_text("1 G 0\n2 A 0\n3 C 0\n")
    with pytest.raises(CommandError, match="differs"):
        run("--sequence", "GAA", "--reference", str(other), "--prediction", "...")
    unknown = tmp_path / "x.txt"
    unknown.write_text("...")
    with pytest.raises(CommandError, match="extension"):
        run("--sequence", "GAC", "--reference", str(unknown), "--prediction", "...")


def test_real_subprocess():
    proc = subprocess.run(
        [
            PYTHON,
            "manage.py",
            "compare",
            "--sequence",
            SEQ,
            "--reference",
            REF,
            "--prediction",
            PRED,
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["wl"] == pytest.approx(0.25) and r["tp"] == 0 and KEYS <= r.keys()
    bad = subprocess.run(
        [PYTHON, "manage.py", "compare", "--sequence", "ACG", "--reference", "((", "--prediction", "..."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode != 0 and "never closed" in bad.stderr
