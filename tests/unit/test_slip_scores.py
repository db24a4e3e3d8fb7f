"""Slippage mode (SCIENCE.md §2): sensitivity from the reference side, PPV from the prediction side.

Checked against a brute-force matcher written here (every predicted pair against every reference pair,
|Δi| + |Δj| <= 1), the issue's hand example and the ``compare`` command.
"""

from __future__ import annotations

import json
import math
import random
from io import StringIO

import pytest
from django.core.management import call_command

from comparna.rna.formats import write_dot_bracket
from comparna.rna.metrics import (
    SLIP_CONVENTION,
    PairCounts,
    SlippedCounts,
    convention,
    count_pairs,
    pool_counts,
)
from comparna.rna.structure import Structure
from tests.unit.test_rna_structure import perturb, random_structure


def slipped(p: tuple[int, int], q: tuple[int, int]) -> bool:
    return abs(p[0] - q[0]) + abs(p[1] - q[1]) <= 1


def brute_force(ref: Structure, pred: Structure) -> dict:
    """The slipped scores from their definitions, with loops over all pairs of pairs."""
    R, P = sorted(ref.pairs), sorted(pred.pairs)
    ref_matched = sum(1 for r in R if any(slipped(r, p) for p in P))
    pred_matched = [p for p in P if any(slipped(p, r) for r in R)]
    unmatched = [p for p in P if p not in pred_matched]
    compatible = 0
    for i, j in unmatched:
        if any(x in r for r in R for x in (i, j)):
            continue  # inconsistent
        if any(i < k < j < l or k < i < l < j for k, l in R):
            continue  # contradicting
        compatible += 1
    L = ref.length
    tp_ref, tp_pred = ref_matched, len(pred_matched)
    fn, fp = len(R) - tp_ref, len(unmatched)
    tn = L * (L - 1) // 2 - tp_ref - fp - fn
    fpx = fp - compatible
    sens = tp_ref / len(R) if R else 0.0
    ppv = tp_pred / (tp_pred + fpx) if tp_pred + fpx else 0.0
    den = (tp_pred + fpx) * (tp_ref + fn) * (tn + fpx) * (tn + fn)
    mcc = (math.sqrt(tp_ref * tp_pred) * tn - fpx * fn) / math.sqrt(den) if den > 0 else 0.0
    return dict(tp=tp_ref, tp_predicted=tp_pred, fn=fn, fp=fp, compatible=compatible, tn=tn,
                sensitivity=sens, ppv=ppv, mcc=mcc)


def test_issue_example_prediction_side_ppv():
    # one predicted pair (5, 20) slip-matches both reference pairs; (10, 25) crosses (5, 21)
    ref = Structure.from_pairs(30, [(5, 21), (6, 20)])
    pred = Structure.from_pairs(30, [(5, 20), (10, 25)])
    c = count_pairs(ref, pred, slip=True)
    assert isinstance(c, SlippedCounts)
    assert (c.tp, c.tp_predicted, c.fn, c.fp, c.fp_contradicting, c.fp_compatible) == (2, 1, 0, 1, 1, 0)
    assert c.sensitivity == 1.0
    assert c.ppv == 0.5  # the reference-side count gave 2/3
    assert c.mcc == pytest.approx((math.sqrt(2) * c.tn - 1 * 0) / math.sqrt(2 * 2 * (c.tn + 1) * c.tn))
    assert c.f1 == pytest.approx(2 * 0.5 / 1.5)


def test_slip_scores_equal_brute_force_matcher():
    rng = random.Random(1402)
    cases = differs = 0
    for k in range(1500):
        L = rng.randint(2, 40)
        ref = random_structure(rng, L)
        pred = perturb(rng, ref) if k % 3 else random_structure(rng, L)
        c = count_pairs(ref, pred, slip=True)
        want = brute_force(ref, pred)
        assert (c.tp, c.tp_predicted, c.fn, c.fp, c.fp_compatible, c.tn) == (
            want["tp"], want["tp_predicted"], want["fn"], want["fp"], want["compatible"], want["tn"]
        ), (ref, pred)
        assert c.sensitivity == pytest.approx(want["sensitivity"], abs=1e-15)
        assert c.ppv == pytest.approx(want["ppv"], abs=1e-15)
        assert c.mcc == pytest.approx(want["mcc"], abs=1e-12)
        cases += 1
        differs += c.tp != c.tp_predicted
    assert cases >= 1000
    assert differs > 50  # many cases where one pair matches two of the other side


def test_slipped_mcc_is_the_ordinary_mcc_when_both_sides_agree_and_pools():
    rng = random.Random(1403)
    counts = []
    for _ in range(300):
        ref = random_structure(rng, 30)
        pred = perturb(rng, ref, allow_multiplets=False)
        c = count_pairs(ref, pred, slip=True)
        counts.append(c)
        if c.tp == c.tp_predicted:
            plain = PairCounts(*(c.as_dict()[k] for k in c.as_dict()))
            assert c.mcc == pytest.approx(plain.mcc, abs=1e-12) and c.ppv == plain.ppv
    pooled = pool_counts(counts)
    assert isinstance(pooled, SlippedCounts)
    assert pooled.tp_predicted == sum(c.tp_predicted for c in counts)
    assert pooled.tp == sum(c.tp for c in counts)
    with pytest.raises(TypeError):
        pool_counts([counts[0], count_pairs(Structure(30), Structure(30))])


def test_convention_string_records_slippage():
    assert convention(slip=False) == convention()
    assert SLIP_CONVENTION in convention(slip=True) and "TPpred" in SLIP_CONVENTION
    assert "slip" not in convention(slip=False)


def test_compare_slip_json_reports_both_counts():
    ref = Structure.from_pairs(30, [(5, 21), (6, 20)])
    pred = Structure.from_pairs(30, [(5, 20), (10, 25)])
    out = StringIO()
    call_command("compare", "--sequence", "A" * 30, "--reference", write_dot_bracket(ref), "--prediction",
                 write_dot_bracket(pred), "--slip", "--json", stdout=out)
    r = json.loads(out.getvalue())
    assert (r["tp"], r["tp_predicted"], r["fp"]) == (2, 1, 1)
    assert r["ppv"] == 0.5 and r["sensitivity"] == 1.0 and r["slip"] is True
    assert SLIP_CONVENTION in r["convention"]
    out = StringIO()
    call_command("compare", "--sequence", "A" * 30, "--reference", write_dot_bracket(ref), "--prediction",
                 write_dot_bracket(pred), stdout=out)
    assert "tp_predicted" not in out.getvalue() and "slip" in out.getvalue()
