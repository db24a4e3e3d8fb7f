"""Mapping a released chain onto the announced sequence, and scoring windows (comparna.rna.seqmap)."""

from __future__ import annotations

from comparna.rna.metrics import count_pairs
from comparna.rna.seqmap import chain_pairs_on_target, map_chain, restrict
from comparna.rna.structure import Structure

TARGET = "GGGAAACCCUUUGGGAAACCCUU"  # 23 nt


def test_substring_chain_maps_by_offset():
    chain = TARGET[2:20]  # two 5' and three 3' residues not observed
    m = map_chain(TARGET, chain)
    assert m.identity == 1.0 and m.coverage == 18 / 23
    assert m.positions[0] == 3 and m.positions[-1] == 20 and m.ranges() == [[3, 20]]
    # chain pair (1, 18) is target pair (3, 20)
    assert chain_pairs_on_target([(1, 18, "cWW"), (2, 17, "cWW")], m) == [(3, 20), (4, 19)]


def test_mismatch_and_internal_gap_align_globally():
    target = "GAAUUGCGGGAAAGGGGUCAACAGCCGUUCAGUACC"  # the start of 1GID's P4-P6 (36 nt)
    chain = target[:10] + "U" + target[11:20] + target[24:]  # one substitution, four residues missing
    m = map_chain(target, chain)
    assert m.positions[:10] == tuple(range(1, 11))
    assert m.positions[-1] == 36 and None not in m.positions
    assert all(type(p) is int for p in m.positions)  # stored as JSON
    assert round(m.identity, 3) == round(31 / 32, 3)
    assert m.ranges() == [[1, 20], [25, 36]]


def test_unrelated_chain_has_low_identity():
    m = map_chain(TARGET, "ACGUACGUACGUACGUACGUAC")
    assert m.identity < 0.8


def test_restrict_scores_only_observed_positions():
    window = list(range(3, 21))
    reference = restrict([(3, 20), (4, 19)], window)
    # the prediction's pair with position 1 (not observed) is neither TP nor FP
    prediction = restrict([(1, 21), (3, 20), (5, 18)], window)
    assert reference == Structure.from_pairs(18, [(1, 18), (2, 17)])
    assert prediction == Structure.from_pairs(18, [(1, 18), (3, 16)])
    counts = count_pairs(reference, prediction)
    assert (counts.tp, counts.fp, counts.fn) == (1, 1, 1)
