"""Sfold's decision rule on a sample: Ward clustering, Calinski-Harabasz choice, centroid of the largest."""

from __future__ import annotations

import random

import numpy as np
import pytest

from predictors.programs.sampled_clusters import (
    base_pair_distances,
    calinski_harabasz,
    centroid,
    cluster_sample,
    largest_cluster_centroid,
    pair_frequencies,
)

HAIRPIN_A = frozenset({(1, 20), (2, 19), (3, 18), (4, 17)})
HAIRPIN_B = frozenset({(6, 15), (7, 14), (8, 13)})


def _noisy(base: frozenset, rng: random.Random) -> frozenset:
    """``base`` with one pair dropped at times and one of 40 far-away pairs added: many distinct members."""
    pairs = set(base)
    if rng.random() < 0.5:
        pairs.discard(rng.choice(sorted(pairs)))
    k = rng.randrange(40)
    pairs.add((30 + k, 200 - k))
    return frozenset(pairs)


def test_base_pair_distance_is_the_symmetric_difference():
    sample = [HAIRPIN_A, HAIRPIN_B, frozenset(), frozenset({(1, 20)})]
    d2 = base_pair_distances(sample)
    for a in range(4):
        for b in range(4):
            assert d2[a, b] == len(sample[a] ^ sample[b])


def test_calinski_harabasz_matches_the_definition_on_explicit_vectors():
    rng = random.Random(3)
    sample = [_noisy(HAIRPIN_A, rng) for _ in range(12)] + [_noisy(HAIRPIN_B, rng) for _ in range(7)]
    labels = np.array([1] * 12 + [2] * 7)
    # Independent route: 0/1 vectors, cluster means, between and within sums of squares.
    universe = sorted(set().union(*sample))
    x = np.array([[p in s for p in universe] for s in sample], dtype=float)
    mean = x.mean(axis=0)
    within = sum(((x[labels == c] - x[labels == c].mean(axis=0)) ** 2).sum() for c in (1, 2))
    between = sum((labels == c).sum() * ((x[labels == c].mean(axis=0) - mean) ** 2).sum() for c in (1, 2))
    expected = (between / 1) / (within / (len(sample) - 2))
    assert calinski_harabasz(base_pair_distances(sample).astype(float), labels) == pytest.approx(expected)


def test_two_populations_give_two_clusters_and_the_larger_ones_centroid():
    rng = random.Random(5)
    sample = [_noisy(HAIRPIN_B, rng) for _ in range(30)] + [_noisy(HAIRPIN_A, rng) for _ in range(70)]
    rng.shuffle(sample)
    pairs, clustering = largest_cluster_centroid(sample)
    assert clustering.n_clusters == 2 and sorted(clustering.sizes()) == [30, 70]
    assert pairs == sorted(HAIRPIN_A)


def test_duplicates_only_make_each_distinct_structure_a_cluster():
    # With few distinct structures the within-cluster spread can reach 0 (index +inf): the prediction is
    # then the most frequent structure of the sample.
    sample = [HAIRPIN_A] * 6 + [HAIRPIN_B] * 9 + [frozenset()] * 2
    pairs, clustering = largest_cluster_centroid(sample)
    assert clustering.n_clusters == 3 and clustering.ch_index == float("inf")
    assert pairs == sorted(HAIRPIN_B)


def test_identical_sample_is_one_cluster():
    clustering = cluster_sample([HAIRPIN_A] * 50)
    assert clustering.n_clusters == 1 and clustering.ch_index is None
    assert largest_cluster_centroid([HAIRPIN_A] * 50)[0] == sorted(HAIRPIN_A)


def test_centroid_keeps_pairs_in_more_than_half_and_frequencies_are_fractions():
    sample = [frozenset({(1, 9)}), frozenset({(1, 9), (2, 8)}), frozenset({(2, 8)}), frozenset({(1, 9)})]
    assert centroid(sample) == [(1, 9)]  # (2, 8) is in exactly half: not more than half
    assert pair_frequencies(sample) == {(1, 9): 0.75, (2, 8): 0.5}


def test_at_most_twenty_clusters():
    # 40 mutually distant structures (disjoint single pairs): the index may not ask for more than 20.
    sample = [frozenset({(k, k + 50)}) for k in range(1, 41)] * 2
    assert 2 <= cluster_sample(sample).n_clusters <= 20
