"""Properties every metric of the registry must have, parametrised over it (after scikit-learn's
``sklearn/metrics/tests/test_common.py``): a new metric is checked by every test here, and the classification
test fails until it is placed in each of the property lists below."""

from __future__ import annotations

import random

import pytest

from comparna.rna.metric_registry import (
    BY_NAME,
    COUNT_FIELDS,
    METRIC_NAMES,
    METRICS,
    POOLED,
    STORED_FIELDS,
    Metric,
    engine_counts,
    pooled_scores,
    scores_of,
)
from comparna.rna.metrics import PairCounts, count_pairs, pool_counts
from comparna.rna.structure import Structure

# -- classification: every metric is in exactly one list of each pair ----------------------------------------
#: Unchanged when reference and prediction swap roles (for counts: FN <-> FP with no compatible FP).
SYMMETRIC = {"mcc", "f1", "wl"}
NOT_SYMMETRIC = {"sensitivity", "ppv"}  # they swap into each other
#: Unchanged when every count is multiplied by the same factor (a ratio of counts).
SCALE_INVARIANT = {"mcc", "sensitivity", "ppv", "f1"}
NOT_FROM_COUNTS = {"wl"}
#: Reaches its zero-division value when there is no pair on either side.
ZERO_WITHOUT_PAIRS = {"mcc", "sensitivity", "ppv", "f1"}
PERFECT_WITHOUT_PAIRS = {"wl"}  # identical (empty) structures score 1


def test_no_metric_unclassified():
    names = set(METRIC_NAMES)
    for a, b in ((SYMMETRIC, NOT_SYMMETRIC), (SCALE_INVARIANT, NOT_FROM_COUNTS),
                 (ZERO_WITHOUT_PAIRS, PERFECT_WITHOUT_PAIRS)):
        assert a | b == names, f"unclassified: {names - (a | b)}, unknown: {(a | b) - names}"
        assert not a & b, f"classified twice: {a & b}"
    assert {m.name for m in POOLED} == SCALE_INVARIANT  # exactly the count metrics can be pooled


def test_registry_names_are_unique_and_stored_after_the_counts():
    assert len(METRIC_NAMES) == len(set(METRIC_NAMES)) == len(BY_NAME)
    assert STORED_FIELDS == (*COUNT_FIELDS, *METRIC_NAMES)
    assert not set(METRIC_NAMES) & set(COUNT_FIELDS)


# -- data ----------------------------------------------------------------------------------------------------
def random_structure(rng: random.Random, n: int) -> Structure:
    pairs, used = set(), set()
    for _ in range(n // 3):
        i, j = sorted(rng.sample(range(1, n + 1), 2))
        if j - i > 3 and i not in used and j not in used:
            pairs.add((i, j))
            used |= {i, j}
    return Structure.from_pairs(n, pairs)


def structure_pairs(seed: int, n: int = 60) -> tuple[Structure, Structure]:
    rng = random.Random(seed)
    return random_structure(rng, n), random_structure(rng, n)


def random_counts(rng: random.Random) -> PairCounts:
    tp, fn = rng.randrange(0, 40), rng.randrange(0, 40)
    inc, con, com = rng.randrange(0, 10), rng.randrange(0, 10), rng.randrange(0, 10)
    return PairCounts(tp, fn, inc + con + com, inc, con, com, rng.randrange(0, 5000))


def value(metric: Metric, reference: Structure, prediction: Structure) -> float:
    return scores_of(count_pairs(reference, prediction), reference, prediction)[metric.name]


# -- properties ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", METRICS, ids=METRIC_NAMES)
def test_values_stay_within_bounds(metric):
    low, high = metric.bounds
    for seed in range(40):
        reference, prediction = structure_pairs(seed)
        assert low <= value(metric, reference, prediction) <= high


@pytest.mark.parametrize("metric", METRICS, ids=METRIC_NAMES)
def test_a_perfect_prediction_gets_the_best_value_and_others_no_better(metric):
    best = metric.bounds[1] if metric.higher_is_better else metric.bounds[0]
    for seed in range(20):
        reference, prediction = structure_pairs(seed)
        assert reference.pairs, "the data must have pairs to be meaningful"
        assert value(metric, reference, reference) == pytest.approx(best)
        worse_or_equal = value(metric, reference, prediction) <= best if metric.higher_is_better else (
            value(metric, reference, prediction) >= best
        )
        assert worse_or_equal


@pytest.mark.parametrize("metric", METRICS, ids=METRIC_NAMES)
def test_no_pairs_on_either_side(metric):
    empty = Structure.from_pairs(30, [])
    got = value(metric, empty, empty)
    if metric.name in ZERO_WITHOUT_PAIRS:
        assert metric.zero_division is not None and got == metric.zero_division
    else:
        assert metric.zero_division is None  # its denominator is never zero: it has a value here
        assert got == pytest.approx(metric.bounds[1] if metric.higher_is_better else metric.bounds[0])


@pytest.mark.parametrize("metric", METRICS, ids=METRIC_NAMES)
def test_symmetry_as_classified(metric):
    rng = random.Random(7)
    same = []
    for seed in range(30):
        if metric.needs == "structures":
            a, b = structure_pairs(seed)
            same.append(metric.of_structures(a, b) == pytest.approx(metric.of_structures(b, a)))
        else:
            tp, fn, fp, tn = (rng.randrange(1, 50) for _ in range(4))
            forward, swapped = PairCounts(tp, fn, fp, fp, 0, 0, tn), PairCounts(tp, fp, fn, fn, 0, 0, tn)
            same.append(metric.of_counts(forward) == pytest.approx(metric.of_counts(swapped)))
    # symmetric on every case exactly when classified so (a non-symmetric one shows a counter-example)
    assert all(same) == (metric.name in SYMMETRIC)


@pytest.mark.parametrize("metric", POOLED, ids=[m.name for m in POOLED])
def test_counts_metrics_are_scale_invariant_and_pool_by_summing(metric):
    rng = random.Random(3)
    for _ in range(50):
        c = random_counts(rng)
        scaled = PairCounts(*(3 * getattr(c, f) for f in COUNT_FIELDS))
        assert metric.of_counts(scaled) == pytest.approx(metric.of_counts(c))
        # pooling two copies of the same prediction is the same as one
        assert metric.of_counts(pool_counts([c, c])) == pytest.approx(metric.of_counts(c))
        # the ranking engine keeps five counts only: no metric may need the rest of the FP split
        five = engine_counts(c.tp, c.fn, c.fp, c.fp_compatible, c.tn)
        assert metric.of_counts(five) == metric.of_counts(c)


@pytest.mark.parametrize("metric", POOLED, ids=[m.name for m in POOLED])
def test_more_true_positives_never_lower_a_higher_is_better_metric(metric):
    rng = random.Random(5)
    for _ in range(200):
        c = random_counts(rng)
        if c.fn == 0:
            continue
        better = PairCounts(c.tp + 1, c.fn - 1, c.fp, c.fp_inconsistent, c.fp_contradicting, c.fp_compatible,
                            c.tn)
        if metric.higher_is_better:
            assert metric.of_counts(better) >= metric.of_counts(c) - 1e-12
        else:
            assert metric.of_counts(better) <= metric.of_counts(c) + 1e-12


def test_pooled_scores_are_the_count_metrics_in_registry_order():
    c = PairCounts(10, 5, 4, 1, 1, 2, 300)
    assert list(pooled_scores(c)) == [m.name for m in POOLED]
    reference, prediction = structure_pairs(1)
    assert list(scores_of(count_pairs(reference, prediction), reference, prediction)) == list(METRIC_NAMES)
