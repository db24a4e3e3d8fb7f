"""remove_redundant / find_similar against the real cd-hit-est (Debian cd-hit 4.8.1)."""

from __future__ import annotations

import random

import pytest

from comparna.rna.redundancy import CdHitError, cdhit_word_size, find_similar, remove_redundant

_SWAP = {"A": "C", "C": "G", "G": "U", "U": "A"}


def rand_seq(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGU") for _ in range(n))


def mutate(seq: str, positions: list[int]) -> str:
    s = list(seq)
    for p in positions:
        s[p] = _SWAP[s[p]]
    return "".join(s)


def test_word_size_follows_user_guide():
    assert cdhit_word_size(0.9) == 8
    assert cdhit_word_size(0.97) == 10
    assert cdhit_word_size(0.86) == 6
    with pytest.raises(ValueError):
        cdhit_word_size(0.7)


def test_duplicates_mismatch_fragment_and_distant_copy():
    base = rand_seq(200, 1)
    seqs = {
        "base": base,
        "dup": base,  # identical -> removed
        "one_mismatch": mutate(base, [100]),  # 99.5 % -> removed
        "fragment50": base[:100],  # covers 50 % of the longer -> kept
        "fragment80": base[:160],  # covers 80 % -> removed
        "identity85": mutate(base, list(range(3, 200, 7)) + [1, 2]),  # 30 of 200 changed = 85 % -> kept
        "unrelated": rand_seq(150, 2),
    }
    res = remove_redundant(seqs)
    # Tie between base and dup (same length): the smaller id is kept.
    assert set(res.representatives) == {"base", "fragment50", "identity85", "unrelated"}
    assert res.member_of == {"dup": "base", "one_mismatch": "base", "fragment80": "base"}
    assert res.identity["dup"] == 100.0
    assert res.identity["one_mismatch"] == pytest.approx(99.5)
    assert res.version == "4.8.1"
    assert res.clusters()["base"] == ["dup", "fragment80", "one_mismatch"]


def test_tie_break_is_by_id_not_input_order():
    s = rand_seq(120, 3)
    a = remove_redundant({"zeta": s, "alpha": s, "mid": s})
    b = remove_redundant({"alpha": s, "mid": s, "zeta": s})
    assert a.representatives == b.representatives == ("alpha",)


def test_identical_pair_after_a_much_longer_sequence():
    # Regression for the CD-HIT 4.8.1 -aL defect worked around with N spacers: without them, the two
    # identical 76-mers below end up in different clusters because a 3000-nt sequence precedes them.
    trna = rand_seq(76, 4)
    res = remove_redundant({"big": rand_seq(3000, 5), "t1": trna, "t2": trna})
    assert res.member_of == {"t2": "t1"}
    assert set(res.representatives) == {"big", "t1"}


def test_threads_do_not_change_the_result():
    base = rand_seq(300, 6)
    seqs = {f"s{i}": mutate(base, [i * 7]) for i in range(10)} | {"u": rand_seq(250, 7), "f": base[:120]}
    one, two = remove_redundant(seqs, threads=1), remove_redundant(seqs, threads=2)
    assert one.representatives == two.representatives
    assert one.member_of == two.member_of
    assert len(one.member_of) == 9  # the ten 1-mismatch copies form one cluster


def test_input_checks():
    with pytest.raises(ValueError, match="symbols"):
        remove_redundant({"x": "ACGUACGUACGURYACGU"})
    with pytest.raises(ValueError, match="shorter than the word size"):
        remove_redundant({"x": "ACGUAC"})
    with pytest.raises(ValueError, match="unusable sequence id"):
        remove_redundant({"a b": "ACGUACGUACGUACGUACGU"})
    assert remove_redundant({}).representatives == ()


def test_missing_program_raises_dedicated_error():
    with pytest.raises(CdHitError, match="not found"):
        remove_redundant({"x": rand_seq(50, 8)}, cdhit_path="cd-hit-est-does-not-exist")


def test_failing_program_reports_its_output():
    # cd-hit-est refuses identity thresholds below 0.8 with a fatal error; force one through word_size.
    with pytest.raises(CdHitError) as info:
        remove_redundant({"x": rand_seq(50, 9)}, identity=0.9, word_size=20)
    assert info.value.returncode not in (None, 0)
    assert "word length" in info.value.stderr_tail


def test_find_similar_both_directions():
    big, trna, ref = rand_seq(3000, 10), rand_seq(76, 11), rand_seq(300, 12)
    reference = {"big": big, "trna": trna, "ref": ref}
    new = {
        "trna_copy": trna,
        "trna_half": trna[:38],  # 50 % of the longer -> novel
        "ref_75": ref[:225],  # 75 % of the longer (reference) -> similar
        "ref_60": ref[:180],  # 60 % -> novel
        "ref_plus100": ref + rand_seq(100, 13),  # reference covers 300/400 = 75 % of the new one -> similar
        "ref_plus150": ref + rand_seq(150, 14),  # 300/450 = 67 % -> novel
        "big_80": big[:2400],
        "big_50": big[:1500],
        "unrelated": rand_seq(90, 15),
    }
    got = find_similar(new, reference)
    assert got == {
        "trna_copy": "trna",
        "trna_half": None,
        "ref_75": "ref",
        "ref_60": None,
        "ref_plus100": "ref",
        "ref_plus150": None,
        "big_80": "big",
        "big_50": None,
        "unrelated": None,
    }
    assert find_similar(new, reference, threads=1) == got


def test_find_similar_one_reference_longer_than_two_new():
    # cd-hit-est-2d reports each db2 sequence for one db1 sequence only; both new ones must still match.
    ref = rand_seq(200, 16)
    new = {"n1": ref + rand_seq(20, 17), "n2": ref + rand_seq(30, 18)}
    assert find_similar(new, {"r": ref}) == {"n1": "r", "n2": "r"}
