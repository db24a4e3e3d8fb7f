"""PR curves: hand-worked Davis-Goadrich examples and a brute-force enumeration of all candidate pairs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate

from comparna.rna.prcurve import PRInput, pool, pr_curve, pr_input, pr_point, pr_points
from comparna.rna.structure import Structure


def test_hand_worked_davis_goadrich_segment():
    # P = 3 of 10 candidates. Scores: one positive at 0.9; two positives and two negatives tied at 0.5;
    # 5 unreported negatives (score 0). PR points (TP, FP): (1, 0), (3, 2), (3, 7).
    # From A = (1, 0) to B = (3, 2) the slope is (2 - 0) / (3 - 1) = 1:
    #   x = 1: recall 2/3, precision 2 / (2 + 0 + 1) = 2/3;  x = 2: recall 1, precision 3 / (3 + 2) = 3/5
    # (a straight line would give 0.8 at recall 2/3). Then a vertical drop to 3/10 (the baseline).
    curve = pr_curve(PRInput(np.array([0.9, 0.5, 0.5, 0.5, 0.5]), np.array([1, 1, 1, 0, 0], bool), 3, 10))
    assert curve.tp.tolist() == [1, 3, 3] and curve.fp.tolist() == [0, 2, 7]
    np.testing.assert_allclose(curve.recall, [0, 1 / 3, 2 / 3, 1, 1])
    np.testing.assert_allclose(curve.precision, [1, 1, 2 / 3, 3 / 5, 3 / 10])
    # exact area: 1/3 (precision 1 up to recall 1/3), then with x continuous on [0, 2]
    # (1/3) * integral of (1 + x)/(1 + 2x) dx = (1/3) * [x/2 + ln(1 + 2x)/4] = (1/3) * (1 + ln(5)/4);
    # the trapezoids over the interpolated points gave 74/90 = 0.8222 (too high).
    assert curve.auc == pytest.approx(2 / 3 + np.log(5) / 12, rel=1e-14)
    assert curve.baseline == pytest.approx(0.3)
    assert "Davis-Goadrich" in curve.interpolation


def test_hand_worked_vertical_steps():
    # P = 2 of 10: scores 0.9 (+), 0.8 (-), 0.5 (-), 0.4 (+), 6 unreported negatives.
    curve = pr_curve(PRInput(np.array([0.9, 0.8, 0.5, 0.4]), np.array([1, 0, 0, 1], bool), 2, 10))
    np.testing.assert_allclose(curve.recall, [0, 0.5, 0.5, 0.5, 1, 1])
    np.testing.assert_allclose(curve.precision, [1, 1, 0.5, 1 / 3, 0.5, 0.2])
    # 0.5 up to recall 1/2; from (TP, FP) = (1, 2) to (2, 2): (1/2) * integral_0^1 (1 + x)/(3 + x) dx
    # = (1/2) * (1 - 2 ln(4/3)); the vertical steps have no area.
    assert curve.auc == pytest.approx(0.5 + 0.5 * (1 - 2 * np.log(4 / 3)), rel=1e-14)


def brute_force_points(reference: Structure, probabilities: dict) -> list[tuple[float, int, int]]:
    length = reference.length
    candidates = [(i, j) for i, j in itertools.combinations(range(1, length + 1), 2)]
    scored = [(probabilities.get(pair, 0.0), pair in reference.pairs) for pair in candidates]
    points = []
    for threshold in sorted({s for s, _ in scored}, reverse=True):
        tp = sum(1 for s, label in scored if s >= threshold and label)
        fp = sum(1 for s, label in scored if s >= threshold and not label)
        points.append((threshold, tp, fp))
    return points


def naive_dg_curve(points: list[tuple[float, int, int]], positives: int) -> tuple[list, list]:
    recall, precision = [], []
    tp_a, fp_a = 0, 0
    for _, tp_b, fp_b in points:
        if tp_b > tp_a:
            for x in range(1, tp_b - tp_a + 1):
                tp = tp_a + x
                recall.append(tp / positives)
                precision.append(tp / (tp + fp_a + x * (fp_b - fp_a) / (tp_b - tp_a)))
        else:
            recall.append(tp_b / positives)
            precision.append(tp_b / (tp_b + fp_b) if tp_b + fp_b else 0.0)
        tp_a, fp_a = tp_b, fp_b
    first = points[0]
    start = first[1] / (first[1] + first[2]) if first[1] else 0.0
    return [0.0, *recall], [start, *precision]


def random_target(rng, length: int):
    pairs = set()
    free = list(range(1, length + 1))
    rng.shuffle(free)
    for k in range(0, length // 3, 2):
        i, j = sorted((free[k], free[k + 1]))
        pairs.add((i, j))
    reference = Structure.from_pairs(length, pairs)
    probabilities = {pair: round(float(rng.uniform(0.05, 1)), 1) for pair in pairs if rng.random() < 0.8}
    for _ in range(length):
        i, j = sorted(rng.choice(np.arange(1, length + 1), 2, replace=False).tolist())
        probabilities.setdefault((i, j), round(float(rng.uniform(0, 0.9)), 1))
    return reference, probabilities


def test_matches_brute_force_enumeration_per_target_and_pooled():
    rng = np.random.default_rng(3)
    targets = [random_target(rng, length) for length in (25, 40, 33)]
    inputs = [pr_input(ref, probs) for ref, probs in targets]
    for (ref, probs), inp in zip(targets, inputs, strict=True):
        thresholds, tp, fp = pr_points(inp)
        points = brute_force_points(ref, probs)
        assert list(zip(thresholds.tolist(), tp.tolist(), fp.tolist(), strict=True)) == points
        curve = pr_curve(inp)
        recall, precision = naive_dg_curve(points, len(ref.pairs))
        np.testing.assert_allclose(curve.recall, recall)
        np.testing.assert_allclose(curve.precision, precision)
        assert curve.baseline == pytest.approx(len(ref.pairs) / (ref.length * (ref.length - 1) / 2))
        assert 0 < curve.auc <= 1
    pooled = pool(inputs)
    assert pooled.positives == sum(len(r.pairs) for r, _ in targets)
    assert pooled.candidates == sum(r.length * (r.length - 1) // 2 for r, _ in targets)
    curve = pr_curve(pooled)
    assert curve.recall[-1] == 1 and curve.precision[-1] == pytest.approx(pooled.baseline)


def test_perfect_probabilities_give_auc_one_and_binary_points():
    ref = Structure.from_pairs(30, [(1, 30), (2, 29), (3, 28)])
    curve = pr_curve(pr_input(ref, {pair: 0.9 for pair in ref.pairs}))
    assert curve.auc == pytest.approx(1.0)
    assert pr_point(tp=3, fn=1, fp=1) == (0.75, 0.75)
    assert pr_point(tp=0, fn=3, fp=0) == (0.0, 0.0)


def test_invalid_pairs_and_scores_are_rejected():
    ref = Structure.from_pairs(10, [(1, 10)])
    with pytest.raises(ValueError, match=r"\(5, 3\)"):
        pr_input(ref, {(5, 3): 0.5})
    with pytest.raises(ValueError, match="beyond|candidate"):
        pr_input(ref, {(1, 11): 0.5})
    with pytest.raises(ValueError, match="non-negative"):
        pr_input(ref, {(1, 10): -0.1})


# --------------------------------------------------------------------------- exact AUC vs an independent one
def independent_dg_auc(scores: list[float], labels: list[bool]) -> float:
    """AUC-PR of the Davis-Goadrich curve by adaptive numerical integration (scipy's QUADPACK) of the
    interpolated precision over recall, segment by segment, with PR points counted by brute force over every
    candidate (unreported ones given as score 0)."""
    positives = sum(labels)
    points = [(0, 0)]
    for threshold in sorted(set(scores), reverse=True):
        points.append((sum(1 for s, y in zip(scores, labels, strict=True) if s >= threshold and y),
                       sum(1 for s, y in zip(scores, labels, strict=True) if s >= threshold and not y)))
    area = 0.0
    for (tp_a, fp_a), (tp_b, fp_b) in itertools.pairwise(points):
        if tp_b == tp_a:
            continue  # vertical: no area

        def precision(r, tp_a=tp_a, fp_a=fp_a, tp_b=tp_b, fp_b=fp_b):
            x = r * positives - tp_a
            return (tp_a + x) / (tp_a + x + fp_a + x * (fp_b - fp_a) / (tp_b - tp_a))

        value, error = integrate.quad(precision, tp_a / positives, tp_b / positives, epsabs=1e-14,
                                      epsrel=1e-13, limit=200)
        assert error < 1e-12
        area += value
    return area


def test_tie_and_missing_vector_of_science_md():
    # 5 positives scored 1.0; 5 positives and 1000 negatives unreported (score 0).
    curve = pr_curve(PRInput(np.ones(5), np.ones(5, bool), 10, 1010))
    assert round(curve.auc, 4) == 0.5156
    independent = independent_dg_auc([1.0] * 5 + [0.0] * 1005, [True] * 10 + [False] * 1000)
    assert curve.auc == pytest.approx(independent, abs=1e-9)
    # closed form: 1/2 + (1/10) * (25/1005 + 25000/1005**2 * ln(1 + 1005/5))
    assert curve.auc == pytest.approx(0.5 + (25 / 1005 + 25000 / 1005**2 * np.log(202)) / 10, rel=1e-14)
    assert "exact integral" in curve.interpolation


def test_auc_equals_numerical_integration_on_random_vectors_with_ties():
    rng = np.random.default_rng(14)
    compared = tied = 0
    for _ in range(1000):
        candidates = int(rng.integers(2, 60))
        labels = rng.random(candidates) < rng.uniform(0.05, 0.6)
        if not labels.any():
            labels[rng.integers(candidates)] = True
        # scores on a coarse grid (ties), positives a little higher; some pairs unreported (score 0)
        scores = np.round(rng.random(candidates) * 0.6 + 0.4 * labels * rng.random(candidates), 1)
        scores[rng.random(candidates) < rng.uniform(0, 0.5)] = 0.0
        reported = scores > 0
        curve = pr_curve(PRInput(scores[reported], labels[reported], int(labels.sum()), candidates))
        expected = independent_dg_auc(scores.tolist(), labels.tolist())
        assert curve.auc == pytest.approx(expected, abs=1e-9), (scores, labels)
        compared += 1
        tied += np.unique(scores).size < candidates
    assert compared == 1000 and tied > 900
