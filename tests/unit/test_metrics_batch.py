"""Vectorised batch scoring equals the per-prediction definitions exactly (counts and bit-identical scores).

The per-prediction :func:`count_pairs` is itself checked against the naive L×L definitions in
test_rna_metrics.py; here every batch result is compared with it, on random structures with pseudoknots and
multiplets (positions in three or more pairs included), empty structures, slippage mode, 3000-nt structures,
the stored-text input and small chunks.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from comparna.rna import metrics_batch
from comparna.rna.canonical import structure_to_text
from comparna.rna.metrics import COUNT_NAMES, count_pairs, score_counts
from comparna.rna.metrics_batch import (
    count_batch,
    pairs_of_structures,
    pairs_of_texts,
    score_structures,
    score_texts,
)
from comparna.rna.structure import Structure, StructureFormatError
from tests.unit.test_rna_structure import perturb, random_pseudoknotted, random_structure


def crowded(rng: random.Random, L: int) -> Structure:
    """Pairs concentrated on a few positions: base triples, quadruples and more."""
    hubs = rng.sample(range(1, L + 1), 2)
    pairs = {tuple(sorted((h, x))) for h in hubs for x in rng.sample(range(1, L + 1), 5) if x != h}
    return Structure.from_pairs(L, pairs)


def workload(seed: int, targets: int, per_target: int):
    rng = random.Random(seed)
    refs, preds, case = [], [], []
    for t in range(targets):
        L = rng.choice([0, 1, 2, rng.randint(3, 40)])
        ref = crowded(rng, L) if L > 8 and t % 7 == 0 else random_structure(rng, L)
        refs.append(ref)
        for k in range(per_target):
            if L > 8 and k == 3:
                pred = crowded(rng, L)
            else:
                pred = perturb(rng, ref) if k % 2 else random_structure(rng, L)
            preds.append(pred)
            case.append(t)
    return refs, preds, case


def expected(refs, preds, case, slip):
    counts = [count_pairs(refs[t], p, slip=slip) for t, p in zip(case, preds, strict=True)]
    return counts, {k: np.array([score_counts(c)[k] for c in counts]) for k in ("sensitivity", "ppv", "mcc",
                                                                                 "f1")}


@pytest.mark.parametrize("slip", [False, True])
def test_batch_equals_count_pairs_from_structures_and_texts(slip, monkeypatch):
    refs, preds, case = workload(19, 300, 5)  # 1500 comparisons
    want, want_scores = expected(refs, preds, case, slip)
    assert sum(max((len(v) for v in r.partners().values()), default=0) > 2 for r in refs) > 10
    # small chunks: many references are split over chunks and re-indexed
    monkeypatch.setattr(metrics_batch, "CHUNK_PAIRS", 500)
    for batch, scores in (
        score_structures(refs, preds, case, slip=slip),
        score_texts([r.length for r in refs], [structure_to_text(r) for r in refs],
                    [structure_to_text(p) for p in preds], case, slip=slip),
    ):
        assert batch.pair_counts() == want
        for key, values in want_scores.items():
            assert np.array_equal(scores[key], values), key  # bit-identical, not approximately equal
    # one pass without chunks, through the low-level calls
    batch = count_batch(pairs_of_structures(refs), pairs_of_structures(preds), case, slip=slip)
    assert batch.pair_counts() == want
    assert (batch.tp_predicted is not None) == slip


def test_long_pseudoknotted_structures_and_one_target_batch():
    rng = random.Random(20)
    ref = random_pseudoknotted(rng, 3000, layers=3)
    preds = [perturb(rng, ref) for _ in range(6)] + [Structure(3000), ref]
    batch, scores = score_structures([ref], preds, [0] * len(preds))
    assert batch.pair_counts() == [count_pairs(ref, p) for p in preds]
    assert scores["mcc"][-1] == 1.0 and scores["sensitivity"][-2] == 0.0
    assert np.array_equal(batch.column("tp") + batch.column("fn"), np.full(len(preds), len(ref.pairs)))


def test_empty_batches():
    batch, scores = score_texts([], [], [], [])
    assert batch.counts.shape == (0, len(COUNT_NAMES)) and scores["mcc"].shape == (0,)
    batch, scores = score_structures([Structure(5)], [Structure(5)], [0], slip=True)
    assert batch.counts.tolist() == [[0, 0, 0, 0, 0, 0, 10]] and batch.tp_predicted.tolist() == [0]


def test_text_parsing_follows_structure_from_text():
    arrays = pairs_of_texts([10, 0, 12, 8], ["1-10 2-9", "", " 4-3\t1-12 1-12\n", "8-5 1-2"])
    assert arrays.owner.tolist() == [0, 0, 2, 2, 3, 3]
    assert list(zip(arrays.i.tolist(), arrays.j.tolist(), strict=True)) == [
        (1, 10), (2, 9), (1, 12), (3, 4), (1, 2), (5, 8)]  # turned round, sorted, a repeat kept once
    assert arrays.sizes().tolist() == [2, 0, 2, 2]
    for texts, message in (
        (["1-2", "3-4-5"], "structure 1: pair token '3-4-5'"),
        (["1-2 x-3"], "'x-3'"),
        (["1-2 3"], "'3'"),
        (["1-2 -3"], "'-3'"),
        (["1-2 3−4"], "'3−4'"),
        (["1-2", "5-5"], "structure 1"),
        (["1-2", "2-9"], "1 <= i < j <= 8"),
        (["0-2"], "1 <= i < j"),
    ):
        with pytest.raises(StructureFormatError, match=message):
            pairs_of_texts([8] * len(texts), texts)


def test_mismatched_lengths_and_indices_are_refused():
    refs = pairs_of_structures([Structure(10)])
    with pytest.raises(StructureFormatError, match="prediction 0: length 11"):
        count_batch(refs, pairs_of_structures([Structure(11)]), [0])
    with pytest.raises(ValueError, match="out of range"):
        count_batch(refs, pairs_of_structures([Structure(10)]), [1])


def test_short_parser_for_stored_texts_agrees_with_the_general_one():
    from comparna.rna.pair_arrays import _parse_canonical, _parse_pair_tokens

    rng = random.Random(5)
    canonical = [structure_to_text(random_structure(rng, rng.randint(2, 40))) for _ in range(200)]
    joined = " ".join(t for t in canonical if t)
    fast, general = _parse_canonical(joined), _parse_pair_tokens(joined)
    assert fast is not None and all(np.array_equal(a, b) for a, b in zip(fast, general, strict=True))
    # anything else: the short parser declines or gives exactly what the general one gives
    declined = 0
    for _ in range(3000):
        text = "".join(rng.choice("0123456789-- \t") for _ in range(rng.randint(0, 12)))
        fast = _parse_canonical(text)
        if fast is None:
            declined += 1
            continue
        general = _parse_pair_tokens(text)
        assert general is not None and all(np.array_equal(a, b) for a, b in zip(fast, general, strict=True))
    assert 0 < declined < 3000
    for text in ("1-2  3-4", " 1-2", "1-2 ", "1-2\t3-4", "1-2-3 4", "1234567890-1", "1-2 3", "٣-4", ""):
        assert _parse_canonical(text) is None, text
    for text in ("12345678-87654321 1-99999999", "999999999-1 7-123456789", "0-0 0007-70"):  # 8 and 9 digits
        fast, general = _parse_canonical(text), _parse_pair_tokens(text)
        assert all(np.array_equal(a, b) for a, b in zip(fast, general, strict=True)), text
    # empty texts (structures without pairs) keep the short path and their owners
    arrays = pairs_of_texts([5, 5, 5, 5], ["", "1-5", "", "2-4 1-3"])
    assert arrays.owner.tolist() == [1, 3, 3] and arrays.sizes().tolist() == [0, 1, 0, 2]
