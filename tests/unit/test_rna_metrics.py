"""Counts and scores against independent definitions.

- a deliberately naive reference implementation over the full L×L pair matrix (written here);
- ViennaRNA's base-pair distance (= FP + FN for nested structures without multiplets);
- scikit-learn's Matthews correlation over the flattened upper triangle (where ε = 0, and in general
  after removing the compatible false positives from the candidate set, which is what "FP − ε" means);
- the published CompaRNA check vector.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import RNA
from sklearn.metrics import matthews_corrcoef

from comparna.rna.formats import write_dot_bracket
from comparna.rna.metrics import (
    PairCounts,
    count_pairs,
    mcc,
    mcc_from_arrays,
    pool_counts,
    score_counts,
    slipped_matches,
)
from comparna.rna.structure import Structure, StructureFormatError
from tests.unit.test_rna_structure import perturb, random_nested, random_pseudoknotted, random_structure

# ------------------------------------------------------------------------------------------------------
# naive reference implementation: L×L matrices and loops over everything


def matrix(s: Structure) -> list[list[bool]]:
    m = [[False] * (s.length + 1) for _ in range(s.length + 1)]
    for i, j in s.pairs:
        m[i][j] = m[j][i] = True
    return m


def naive_counts(ref: Structure, pred: Structure, slip: bool = False) -> dict:
    L = ref.length
    R, P = matrix(ref), matrix(pred)

    def has(m, i, j):
        return 1 <= i <= L and 1 <= j <= L and m[i][j]

    def matched(m, i, j):
        if not slip:
            return has(m, i, j)
        return any(has(m, a, b) for a, b in [(i, j), (i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)])

    out = dict(tp=0, fn=0, fp=0, fp_inconsistent=0, fp_contradicting=0, fp_compatible=0)
    for i in range(1, L + 1):
        for j in range(i + 1, L + 1):
            if R[i][j]:
                out["tp" if matched(P, i, j) else "fn"] += 1
            if P[i][j] and not matched(R, i, j):
                out["fp"] += 1
                if any(R[i][k] or R[j][k] for k in range(1, L + 1)):
                    out["fp_inconsistent"] += 1
                elif any(
                    R[k][l] and (i < k < j < l or k < i < l < j)
                    for k in range(1, L + 1)
                    for l in range(k + 1, L + 1)
                ):
                    out["fp_contradicting"] += 1
                else:
                    out["fp_compatible"] += 1
    out["tn"] = L * (L - 1) // 2 - out["tp"] - out["fp"] - out["fn"]
    return out


def naive_mcc(tp, fn, fp, eps, tn):
    x = fp - eps
    d = (tp + x) * (tp + fn) * (tn + x) * (tn + fn)
    return 0.0 if d == 0 else (tp * tn - x * fn) / math.sqrt(d)


def pair_cases(rng: random.Random, n: int, max_len: int):
    for k in range(n):
        L = rng.randint(0, max_len)
        ref = random_structure(rng, L)
        pred = perturb(rng, ref) if k % 2 else random_structure(rng, L)
        yield ref, pred


# ------------------------------------------------------------------------------------------------------


def test_counts_match_naive_matrix_definition():
    rng = random.Random(31)
    kinds = dict(fp_inconsistent=0, fp_contradicting=0, fp_compatible=0)
    for ref, pred in pair_cases(rng, 1200, 24):
        got = count_pairs(ref, pred)
        assert got.as_dict() == naive_counts(ref, pred), (ref, pred)
        for k in kinds:
            kinds[k] += getattr(got, k)
    assert min(kinds.values()) > 100  # every kind of false positive is exercised


def test_slip_counts_match_naive_matrix_definition():
    rng = random.Random(32)
    differs = 0
    for ref, pred in pair_cases(rng, 800, 24):
        got = count_pairs(ref, pred, slip=True)
        assert got.as_dict() == naive_counts(ref, pred, slip=True), (ref, pred)
        ref_m, pred_m = slipped_matches(ref, pred)
        assert got.tp == len(ref_m) and got.fp == len(pred.pairs) - len(pred_m)
        assert got.tp >= count_pairs(ref, pred).tp
        differs += got != count_pairs(ref, pred)
    assert differs > 100


def test_slip_on_a_shifted_helix():
    ref = Structure.from_pairs(12, [(1, 12), (2, 11), (3, 10)])
    pred = Structure.from_pairs(12, [(2, 12), (3, 11), (4, 10)])  # 5' strand slipped by one
    assert count_pairs(ref, pred).tp == 0
    c = count_pairs(ref, pred, slip=True)
    assert (c.tp, c.fn, c.fp) == (3, 0, 0) and c.sensitivity == 1.0 and c.ppv == 1.0


def test_fp_plus_fn_is_viennarna_bp_distance():
    rng = random.Random(33)
    for k in range(600):
        L = rng.randint(1, 120)
        ref = random_nested(rng, L)
        pred = perturb(rng, ref, allow_multiplets=False) if k % 2 else random_nested(rng, L)
        if pred.is_pseudoknotted:
            continue
        c = count_pairs(ref, pred)
        assert c.fp + c.fn == RNA.bp_distance(write_dot_bracket(ref), write_dot_bracket(pred))


def _sklearn_mcc(ref: Structure, pred: Structure, drop=()) -> float:
    L = ref.length
    iu = np.triu_indices(L, k=1)
    keep = np.ones(len(iu[0]), dtype=bool)
    for i, j in drop:
        keep[(iu[0] == i - 1) & (iu[1] == j - 1)] = False
    y_true = np.zeros((L, L), dtype=int)
    y_pred = np.zeros((L, L), dtype=int)
    for i, j in ref.pairs:
        y_true[i - 1, j - 1] = 1
    for i, j in pred.pairs:
        y_pred[i - 1, j - 1] = 1
    return matthews_corrcoef(y_true[iu][keep], y_pred[iu][keep])


@pytest.mark.filterwarnings("ignore:A single label was found")
def test_mcc_matches_sklearn():
    rng = random.Random(34)
    no_eps = with_eps = 0
    for ref, pred in pair_cases(rng, 300, 30):
        if ref.length < 2:
            continue
        c = count_pairs(ref, pred)
        if c.fp_compatible == ref.length * (ref.length - 1) // 2:
            continue  # nothing left to correlate
        if c.fp_compatible == 0:
            assert c.mcc == pytest.approx(_sklearn_mcc(ref, pred), abs=1e-12)
            no_eps += 1
        else:
            # Compatible FPs are neutral: the score is the plain MCC over the candidates without them.
            compatible = [
                p
                for p in pred.pairs - ref.pairs
                if not any(x in q for q in ref.pairs for x in p)
                and not any(p[0] < k < p[1] < l or k < p[0] < l < p[1] for k, l in ref.pairs)
            ]
            assert len(compatible) == c.fp_compatible
            assert c.mcc == pytest.approx(_sklearn_mcc(ref, pred, drop=compatible), abs=1e-12)
            with_eps += 1
    assert no_eps > 50 and with_eps > 30


def test_published_check_vector():
    c = PairCounts(
        tp=1675, fn=500, fp=706, fp_inconsistent=306, fp_contradicting=115, fp_compatible=285, tn=134111
    )
    s = score_counts(c)
    assert round(s["mcc"], 3) == 0.781
    assert round(s["sensitivity"], 3) == 0.770
    assert round(s["ppv"], 3) == 0.799
    assert s["f1"] == pytest.approx(2 * s["sensitivity"] * s["ppv"] / (s["sensitivity"] + s["ppv"]))
    assert mcc_from_arrays([1675], [500], [706], [285], [134111])[0] == pytest.approx(s["mcc"], abs=1e-15)


def test_scores_on_simple_cases_and_zero_denominators():
    e = Structure(10)
    ref = Structure.from_pairs(10, [(1, 10), (2, 9)])
    assert score_counts(count_pairs(e, e)) == dict(sensitivity=0.0, ppv=0.0, mcc=0.0, f1=0.0)
    perfect = count_pairs(ref, ref)
    assert (perfect.tp, perfect.tn) == (2, 43) and perfect.mcc == 1.0 and perfect.f1 == 1.0
    none = count_pairs(ref, e)
    assert none.fn == 2 and none.sensitivity == 0.0 and none.mcc == 0.0
    # one compatible FP changes neither PPV nor MCC
    plus = count_pairs(ref, Structure.from_pairs(10, [(1, 10), (2, 9), (4, 6)]))
    assert plus.fp_compatible == 1 and plus.ppv == 1.0 and plus.mcc == perfect.mcc
    check = count_pairs(
        Structure.from_pairs(20, [(1, 14), (2, 13), (3, 12), (4, 11), (5, 10)]),
        Structure.from_pairs(20, [(7, 20), (8, 19), (9, 18), (10, 17), (11, 16)]),
    )
    assert check.f1 == 0.0 and check.tp == 0
    with pytest.raises(StructureFormatError):
        count_pairs(Structure(5), Structure(6))


def test_pooling_sums_counts_then_scores():
    rng = random.Random(35)
    counts = [count_pairs(r, p) for r, p in pair_cases(rng, 200, 30)]
    pooled = pool_counts(counts)
    for f in ("tp", "fn", "fp", "fp_inconsistent", "fp_contradicting", "fp_compatible", "tn"):
        assert getattr(pooled, f) == sum(getattr(c, f) for c in counts)
    assert sum(counts) == pooled and pool_counts([]) == PairCounts.zero()
    assert pooled.mcc == pytest.approx(
        naive_mcc(pooled.tp, pooled.fn, pooled.fp, pooled.fp_compatible, pooled.tn)
    )
    # pooled is not the mean of per-structure scores
    assert pooled.mcc != pytest.approx(np.mean([c.mcc for c in counts]), abs=1e-6)


def test_mcc_from_arrays_matches_scalar():
    rng = np.random.default_rng(36)
    n = 5000
    tp, fn, eps, tn = (rng.integers(0, 50, n) for _ in range(4))
    fp = eps + rng.integers(0, 50, n)
    tp[:50] = 0
    fn[:50] = 0  # zero denominators
    got = mcc_from_arrays(tp, fn, fp, eps, tn)
    want = [naive_mcc(*map(int, x)) for x in zip(tp, fn, fp, eps, tn, strict=True)]
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert got.shape == (n,) and np.all(got[:50] == 0)
    assert mcc(int(tp[60]), int(fn[60]), int(fp[60]), int(eps[60]), int(tn[60])) == pytest.approx(got[60])


def test_pair_counts_validation():
    with pytest.raises(ValueError):
        PairCounts(1, 1, 3, 1, 1, 0, 5)  # split does not sum to fp
    with pytest.raises(ValueError):
        PairCounts(-1, 0, 0, 0, 0, 0, 0)


def test_long_pseudoknotted_structures_keep_the_count_identities():
    """On 3000-nt pseudoknotted structures the counts still partition pairs and candidates."""
    rng = random.Random(37)
    for _ in range(5):
        ref = random_pseudoknotted(rng, 3000, layers=2)
        pred = perturb(rng, ref)
        c = count_pairs(ref, pred)
        assert c.tp + c.fn == len(ref.pairs) and c.tp + c.fp == len(pred.pairs)
        assert c.tp == len(ref.pairs & pred.pairs)
        assert c.tp + c.fn + c.fp + c.tn == 3000 * 2999 // 2
