"""Issue 35's table through ``manage.py rank --counts`` with a ``family`` column (SCIENCE.md §5).

Each case writes per-target counts whose per-target MCCs differ by the stated amounts (no false positives and
a large TN, so MCC = √(TP/reference) to within 1e-4), runs the command in process (``call_command``: the
same code as the command line without paying for a new interpreter per case) and reads its JSON.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from comparna.rna import thresholds
from comparna.rna.ranking import per_target_mcc, read_counts_with_families

HEADER = ["method", "target", "tp", "fn", "fp", "fp_compatible", "tn", "family"]
REFERENCE = 100
CANDIDATES = 400 * 399 // 2
#: True positives of 100 reference pairs giving these MCCs (√(tp/100) with no false positive).
TP = {0.9: 81, 0.8: 64, 0.7: 49, 0.4: 16}
ARCHIVE_II = (401, 392, 343, 288, 239, 66, 62, 29, 14)


def write(path: Path, rows: list[tuple[str, str, int, str | None]]) -> None:
    """``rows``: (method, target, tp, family or None); every family None leaves the column out."""
    with_family = any(family is not None for *_, family in rows)
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(HEADER if with_family else HEADER[:-1])
        for method, target, tp, family in rows:
            row = [method, target, tp, REFERENCE - tp, 0, 0, CANDIDATES - REFERENCE]
            out.writerow(row + [family] if with_family else row)


def rank(path: Path, *extra: str) -> dict:
    out = io.StringIO()
    call_command("rank", "--counts", str(path), "--json", *extra, stdout=out)
    return json.loads(out.getvalue())


def family_rows(sizes, methods: dict[str, int]) -> list[tuple]:
    rows = []
    for f, size in enumerate(sizes):
        for k in range(size):
            for name, tp in methods.items():
                rows.append((name, f"F{f}_T{k}", tp, f"fam{f}"))
    return rows


def test_the_family_column_is_read_one_label_per_target(tmp_path):
    path = tmp_path / "c.csv"
    write(path, family_rows((3, 2), {"A": 64, "B": 49}))
    table, families = read_counts_with_families(path)
    assert families == ["fam0"] * 3 + ["fam1"] * 2 and len(table.targets) == 5
    scores = per_target_mcc(table)
    assert abs((scores[0] - scores[1]).mean() - 0.10) < 1e-3  # the construction's 0.10 MCC
    # a target given two families is an error naming the line
    path.write_text(
        "method,target,tp,fn,fp,fp_compatible,tn,family\nA,t,1,1,0,0,5,f1\nB,t,1,1,0,0,5,f2\n"
    )
    with pytest.raises(Exception, match="line 3: target t has family 'f2' here, 'f1' on line 2"):
        read_counts_with_families(path)


def test_232_clusters_a_better_on_all_1700_targets_wins(tmp_path):
    """Issue 35 row 3: the normal form gave p = 0.0029 (never a win); the exact null 2.9e-70."""
    small = [1 + k % 5 for k in range(227)]
    small[-1] += 1700 - (450 + 300 + 150 + 80 + 40) - sum(small)
    sizes = [450, 300, 150, 80, 40, *small]
    assert len(sizes) == 232 and sum(sizes) == 1700
    path = tmp_path / "c.csv"
    write(path, family_rows(sizes, {"A": TP[0.8], "B": TP[0.7]}))
    report = rank(path)
    assert report["clusters"] == 232
    assert report["verdicts"]["A"]["B"] == "+" and report["verdicts"]["B"]["A"] == "-"
    assert report["p_values"]["A"]["B"] < 1e-60
    assert [row["method"] for row in report["methods"]] == ["A", "B"]
    assert [(r["rank"], r["rank_low"], r["rank_high"]) for r in report["methods"]] == [(1, 1, 1), (2, 2, 2)]
    assert report["decisions"]["won"] == 1 and report["decisions"]["share_won"] == 1.0
    low, high = report["mean_interval"]["A"]["B"]
    assert low <= report["mean_difference"]["A"]["B"] <= high and high - low < 1e-6  # 0.10 on every target
    shift, shift_low, shift_high = report["hodges_lehmann"]["A"]["B"]
    assert shift == pytest.approx(0.10, abs=1e-3) and shift_low <= shift <= shift_high


def test_archive_ii_nine_families_is_unknown_with_the_floor_reason_not_a_draw(tmp_path):
    """Issue 35 row 4: 2/2^9 = 0.0039 > 0.001: no family-level verdict is possible; the old rule said "="."""
    path = tmp_path / "c.csv"
    write(path, family_rows(ARCHIVE_II, {"A": TP[0.8], "B": TP[0.7]}))
    report = rank(path)
    assert report["clusters"] == 9
    assert report["verdicts"]["A"]["B"] == "?" and report["verdict_reasons"]["A"]["B"] == "floor"
    floor = report["decisions"]["floor"]
    assert floor["fires"] and floor["floor"] == pytest.approx(2 / 2**9) and floor["families_needed"] == 11
    assert report["decisions"]["reasons"] == {"floor": 1} and report["decisions"]["share_unknown"] == 1.0
    # the two methods are tied (nothing decided): each can be first or second
    assert all((r["rank"], r["rank_low"], r["rank_high"]) == (1, 1, 2) for r in report["methods"])
    # the order of the tie: the higher mean MCC first
    assert report["methods"][0]["method"] == "A"


def test_better_on_most_targets_worse_on_average_is_unknown_not_a_draw(tmp_path):
    """Issue 35 row 5: A better by 0.02 on 255 targets, worse by 0.46 on 45 (mean −0.052), no families:
    the signed-rank test favours A at p ≈ 1e-13, the mean favours B: "?" with that reason."""
    rows = []
    for t in range(300):
        tp_a = 67 if t < 255 else 12  # √0.67 − 0.8 = +0.0185, √0.12 − 0.8 = −0.454
        rows += [("A", f"T{t}", tp_a, None), ("B", f"T{t}", TP[0.8], None)]
    path = tmp_path / "c.csv"
    write(path, rows)
    report = rank(path)
    assert report["clusters"] == 300  # no family column: every target its own cluster
    assert report["p_values"]["A"]["B"] < 1e-10
    assert report["mean_difference"]["A"]["B"] == pytest.approx(-0.052, abs=0.002)
    assert report["verdicts"]["A"]["B"] == "?" and report["verdict_reasons"]["A"]["B"] == "direction"
    assert report["decisions"]["reasons"] == {"direction": 1}


def test_three_methods_far_apart_on_nine_families_are_not_all_rank_one_of_one(tmp_path):
    """Issue 35 row 6: 0.10 and 0.40 MCC apart on every target of 9 families: nothing is decidable at the
    family level, so the ranks are a three-way tie whose intervals say so, never "1 [1–1]" for all."""
    path = tmp_path / "c.csv"
    write(path, family_rows(ARCHIVE_II, {"Top": TP[0.9], "Mid": TP[0.8], "Low": TP[0.4]}))
    report = rank(path)
    assert {v for row in report["verdicts"].values() for v in row.values()} == {"?"}
    rows = report["methods"]
    assert [r["method"] for r in rows] == ["Top", "Mid", "Low"]  # a tie, ordered by mean MCC
    assert all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in rows)
    assert all((r["rank_low"], r["rank_high"]) == (1, 3) for r in rows)
    assert report["decisions"]["unknown"] == 3 and report["decisions"]["reasons"] == {"floor": 3}


def test_a_draw_needs_the_interval_inside_delta(tmp_path):
    """"=" only by equivalence: 60 singletons differing by ±0.006 alternately sit inside ±δ; the same with
    ±0.2 alternately is not significant and not equivalent: "?" (open) with the targets that would decide."""
    rows = []
    for t in range(60):
        a, b = (65, 64) if t % 2 else (64, 65)
        rows += [("A", f"T{t}", a, None), ("B", f"T{t}", b, None)]
    path = tmp_path / "c.csv"
    write(path, rows)
    report = rank(path)
    low, high = report["mean_interval"]["A"]["B"]
    assert -thresholds.EQUIVALENCE_DELTA < low and high < thresholds.EQUIVALENCE_DELTA
    assert report["verdicts"]["A"]["B"] == "="
    rows = []
    for t in range(60):
        a, b = (TP[0.9], TP[0.7]) if t % 2 else (TP[0.7], TP[0.9])
        rows += [("A", f"T{t}", a, None), ("B", f"T{t}", b, None)]
    write(path, rows)
    report = rank(path)
    assert report["verdicts"]["A"]["B"] == "?" and report["verdict_reasons"]["A"]["B"] == "open"
    more_targets, more_families = report["to_decide"]["A"]["B"]
    assert more_targets > 0 and more_families > 0


def test_nine_families_get_a_labelled_conditional_view_never_mixed_with_the_family_level(tmp_path):
    """Where the floor fires, the within-these-families view decides what the sample of families cannot, and
    says for what: "for RNAs of these 9 families; does not generalise to other families"."""
    path = tmp_path / "c.csv"
    write(path, family_rows(ARCHIVE_II, {"Top": TP[0.9], "Mid": TP[0.8], "Low": TP[0.4]}))
    report = rank(path)
    view = report["within_families"]
    assert view["label"] == "for RNAs of these 9 families; does not generalise to other families"
    assert [(r["method"], r["rank"], r["net"]) for r in view["methods"]] == [("Top", 1, 2), ("Mid", 2, 0),
                                                                              ("Low", 3, -2)]
    assert view["verdicts"]["Top"]["Mid"] == "+" and view["verdicts"]["Low"]["Top"] == "-"
    # the family-level verdicts stay "?" (floor): the two views are never mixed
    assert report["verdicts"]["Top"]["Mid"] == "?" and report["methods"][0]["wins"] == 0


def test_the_stratified_variance_is_the_textbook_one():
    """Var d̄ = Σ_f (n_f/N)² s_f²/n_f (Cochran 1977, §5.3), here against a loop over the strata; a stratum of
    one target takes the pooled within-stratum variance."""
    import numpy as np

    from comparna.rna.conditional import stratified_mean_test

    rng = np.random.default_rng(3)
    sizes = [10, 25, 7, 1]
    d = rng.normal(0.03, 0.1, sum(sizes))
    strata = np.repeat(np.arange(len(sizes)), sizes)
    mean, se, df = stratified_mean_test(d, strata)
    n = len(d)
    within = [np.var(d[strata == f], ddof=1) for f in range(3)]
    pooled = sum(v * (k - 1) for v, k in zip(within, sizes, strict=False)) / (n - len(sizes))
    expected = sum((k / n) ** 2 * v / k for v, k in zip([*within, pooled], sizes, strict=True))
    assert mean == pytest.approx(d.mean()) and se == pytest.approx(np.sqrt(expected)) and df == n - len(sizes)
