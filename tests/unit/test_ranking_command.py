"""``manage.py rank --counts`` end to end (once through a subprocess, the rest in process: a new interpreter
costs ~2-5 s of Django and SciPy imports per call, the 12-target computation ~0.1 s), and the CSV reader's
errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comparna.rna.ranking import CountsFormatError, pairwise_ranking, read_counts_csv, target_level_ranking

REPO = Path(__file__).resolve().parents[2]
HEADER = ["method", "target", "tp", "fn", "fp", "fp_compatible", "tn"]


def write_csv(path: Path, n_methods: int = 5, n_targets: int = 40, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(HEADER)
        for t in range(n_targets):
            length = int(rng.integers(30, 200))
            ref = int(rng.integers(5, length // 3))
            for m in range(n_methods):
                if rng.random() < 0.1:
                    continue
                tp = int(rng.binomial(ref, 0.2 + 0.15 * m))
                fp = int(rng.binomial(ref, 0.3))
                eps = int(rng.binomial(fp, 0.3))
                tn = length * (length - 1) // 2 - ref - fp
                out.writerow([f"M{m}", f"T{t}", tp, ref - tp, fp, eps, tn])


def run_rank(*args: str, fresh: bool = False) -> subprocess.CompletedProcess:
    """``manage.py rank ARGS``: in a new interpreter with ``fresh``, else in process (``call_command``, the
    same command object and parser), with the subprocess's return code, stdout and stderr."""
    if fresh:
        return subprocess.run([sys.executable, "manage.py", "rank", *args], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("rank", *args, stdout=out, stderr=err)
    except CommandError as error:
        return subprocess.CompletedProcess(["rank", *args], 1, out.getvalue(), f"CommandError: {error}\n")
    return subprocess.CompletedProcess(["rank", *args], 0, out.getvalue(), err.getvalue())


def test_rank_command_json(tmp_path):
    path = tmp_path / "counts.csv"
    write_csv(path)
    done = run_rank("--counts", str(path), "--seed", "3", "--json", fresh=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    names = {row["method"] for row in report["methods"]}
    assert names == {f"M{m}" for m in range(5)}
    for row in report["methods"]:
        assert set(row) >= {"method", "rank", "wins", "losses", "draws", "unknown", "mcc"}
        assert row["wins"] + row["losses"] + row["draws"] + row["unknown"] == 4
        assert row["wins"] == sum(v == "+" for v in report["verdicts"][row["method"]].values())
    flip = {"+": "-", "-": "+", "=": "=", "?": "?"}
    verdicts = report["verdicts"]
    assert all(verdicts[b][a] == flip[v] for a, row in verdicts.items() for b, v in row.items())
    # the primary verdict: the target-level engine in process (every target its own family), ranks follow
    # wins, each rank has its interval and the MCC beside it is on the targets that decided the order
    assert report["protocol"] == "target"
    table = read_counts_csv(path)
    result = target_level_ranking(table, seed=3)
    for i, a in enumerate(table.methods):
        for j, b in enumerate(table.methods):
            if i != j:
                assert report["verdicts"][a][b] == result.verdicts[i, j]
    # ranks follow net wins (issue 35; was wins), and every interval holds its rank
    ranks = [(row["rank"], -(row["wins"] - row["losses"])) for row in report["methods"]]
    assert ranks == sorted(ranks)
    assert all(row["net"] == row["wins"] - row["losses"] for row in report["methods"])
    for row in report["methods"]:
        assert row["rank_low"] <= row["rank"] <= row["rank_high"]
        assert row["decided_targets"] <= row["targets"]
    # the best method by construction (M4: highest sensitivity) comes first
    assert report["methods"][0]["method"] == "M4"
    # the CompaRNA 2013 protocol stays available, labelled, and equals its engine
    done = run_rank("--counts", str(path), "--seed", "3", "--json", "--protocol", "2013")
    assert done.returncode == 0, done.stderr
    old = json.loads(done.stdout)
    assert old["protocol"] == "2013" and old["protocol_label"] == "CompaRNA 2013 protocol"
    result = pairwise_ranking(table, seed=3)
    for i, a in enumerate(table.methods):
        for j, b in enumerate(table.methods):
            if i != j:
                assert old["verdicts"][a][b] == result.verdicts[i, j]


def write_seven_of_twelve(path: Path, *, n: int, better: int, delta: int = 1) -> None:
    """A and B on ``n`` targets: A better on ``better`` of them and worse on the rest by as much."""
    length = 100
    candidates = length * (length - 1) // 2
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(HEADER)
        for t in range(n):
            tp_a = 20 + delta if t < better else 20 - delta
            out.writerow(["A", f"T{t}", tp_a, 30 - tp_a, 5, 0, candidates - 35])
            out.writerow(["B", f"T{t}", 20, 10, 5, 0, candidates - 35])


def test_rank_counts_gives_a_draw_for_seven_of_twelve_and_a_win_for_sixty_of_sixty(tmp_path):
    """Issue 27's done-when: the 2013 protocol said "A wins at p < 0.001" for 7 better / 5 worse."""
    path = tmp_path / "seven.csv"
    write_seven_of_twelve(path, n=12, better=7)
    report = json.loads(run_rank("--counts", str(path), "--json").stdout)
    assert report["verdicts"]["A"]["B"] == "=" and report["verdicts"]["B"]["A"] == "="
    assert report["protocol_2013"]["verdicts"]["A"]["B"] == "+"  # what the issue observed
    table = run_rank("--counts", str(path))
    assert "target-level" in table.stdout and "=" in table.stdout
    path = tmp_path / "sixty.csv"
    write_seven_of_twelve(path, n=60, better=60)
    report = json.loads(run_rank("--counts", str(path), "--json").stdout)
    assert report["verdicts"]["A"]["B"] == "+" and report["methods"][0]["method"] == "A"
    assert report["methods"][0]["rank_low"] == report["methods"][0]["rank_high"] == 1
    done = run_rank("--counts", str(path), "--compare-protocols", "--json")
    assert done.returncode == 0, done.stderr
    top = json.loads(done.stdout)["top"]
    assert top[0]["target"]["method"] == "A" and top[0]["protocol_2013"]["method"] == "A"
    text = run_rank("--counts", str(path), "--compare-protocols").stdout
    assert "CompaRNA 2013 protocol" in text and "95% int" in text


def test_rank_command_table_and_errors(tmp_path):
    path = tmp_path / "counts.csv"
    write_csv(path, n_methods=3, n_targets=15)
    done = run_rank("--counts", str(path), "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "rank" in done.stdout and "M2" in done.stdout and "verdicts" in done.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text("method,target,tp,fn,fp,fp_compatible,tn\nA,t1,1,2,3,1,50\nA,t2,1,two,3,1,50\n")
    done = run_rank("--counts", str(bad), "--json")
    assert done.returncode != 0
    assert "line 3" in done.stderr and "fn" in done.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("method,target,tp,fn,fp,tn\nA,t,1,1,1,1\n", "line 1: header lacks column(s) fp_compatible"),
        ("method,target,tp,fn,fp,fp_compatible,tn\nA,t,1,1,1,0,5\nA,t,1,1,1,0,5\n", "line 3: (A, t) already"),
        ("method,target,tp,fn,fp,fp_compatible,tn\nA,t,1,1,1,2,5\n", "line 2: fp_compatible 2 exceeds fp 1"),
        ("method,target,tp,fn,fp,fp_compatible,tn\nA,t,1,-1,1,0,5\n", "line 2: fn is negative"),
        ("method,target,tp,fn,fp,fp_compatible,tn\nA,t,1,1\n", "line 2: expected 7 fields"),
        ("method,target,tp,fn,fp,fp_compatible,tn\n", "no prediction rows"),
        ("", "line 1: empty file"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "x.csv"
    path.write_text(text)
    with pytest.raises(CountsFormatError) as error:
        read_counts_csv(path)
    assert message in str(error.value)
