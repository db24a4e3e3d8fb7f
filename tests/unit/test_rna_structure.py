"""The structure model: crossing, multiplets, partner arrays and pseudoknot level assignment.

Checked against deliberately naive definitions (all pairs of pairs, all subsets) written here.
The random generators are shared with the other test_rna_* files.
"""

from __future__ import annotations

import itertools
import random

import pytest

from comparna.rna.structure import BRACKETS, Structure, StructureFormatError, bracket_levels

# ------------------------------------------------------------------------------------------------------
# seeded random structures (used by the other test_rna_* modules too)


def random_nested_pairs(rng: random.Random, positions: list[int], p_open=0.3, p_close=0.4) -> set:
    """Nested pairs over the given (sorted) positions, built with a stack."""
    stack: list[int] = []
    pairs = set()
    for x in positions:
        r = rng.random()
        if stack and r < p_close:
            pairs.add((stack.pop(), x))
        elif r < p_close + p_open:
            stack.append(x)
    return pairs


def random_nested(rng: random.Random, L: int) -> Structure:
    return Structure(L, frozenset(random_nested_pairs(rng, list(range(1, L + 1)))))


def random_pseudoknotted(rng: random.Random, L: int, layers: int = 3) -> Structure:
    """Union of nested layers over the positions the earlier layers left unpaired (no multiplets)."""
    pairs: set = set()
    for _ in range(layers):
        used = {x for p in pairs for x in p}
        free = [x for x in range(1, L + 1) if x not in used]
        pairs |= random_nested_pairs(rng, free)
    return Structure(L, frozenset(pairs))


def random_any(rng: random.Random, L: int) -> Structure:
    """Arbitrary pair set (multiplets and crossings likely)."""
    if L < 2:
        return Structure(L, frozenset())
    n = rng.randint(0, L)
    pairs = set()
    for _ in range(n):
        i, j = sorted(rng.sample(range(1, L + 1), 2))
        pairs.add((i, j))
    return Structure(L, frozenset(pairs))


def random_structure(rng: random.Random, L: int) -> Structure:
    kind = rng.choice(["nested", "pk", "any"])
    if kind == "nested":
        return random_nested(rng, L)
    if kind == "pk":
        return random_pseudoknotted(rng, L, layers=rng.randint(2, 4))
    return random_any(rng, L)


def perturb(rng: random.Random, s: Structure, *, allow_multiplets: bool = True) -> Structure:
    """A 'prediction' near ``s``: drop, shift by one and add pairs."""
    out = set()
    for i, j in s.pairs:
        r = rng.random()
        if r < 0.2:
            continue
        if r < 0.45:
            di, dj = rng.choice([(-1, 0), (1, 0), (0, -1), (0, 1), (1, -1)])
            i, j = i + di, j + dj
        if 1 <= i < j <= s.length:
            out.add((i, j))
    for _ in range(rng.randint(0, 3)):
        if s.length >= 2:
            out.add(tuple(sorted(rng.sample(range(1, s.length + 1), 2))))
    result = Structure(s.length, frozenset(out))
    if not allow_multiplets:
        used: set[int] = set()
        keep = set()
        for i, j in sorted(result.pairs):
            if i not in used and j not in used:
                keep.add((i, j))
                used |= {i, j}
        result = Structure(s.length, frozenset(keep))
    return result


# ------------------------------------------------------------------------------------------------------
# naive definitions


def naive_cross(p, q) -> bool:
    (i, j), (k, l) = p, q
    return i < k < j < l or k < i < l < j


def naive_is_nested(pairs) -> bool:
    return not any(naive_cross(p, q) for p, q in itertools.combinations(pairs, 2))


def naive_multiplet_positions(pairs) -> list[int]:
    ends = [x for p in pairs for x in p]
    return sorted({x for x in ends if ends.count(x) > 1})


def naive_max_nested_size(pairs) -> int:
    pairs = list(pairs)
    for k in range(len(pairs), -1, -1):
        if any(naive_is_nested(c) for c in itertools.combinations(pairs, k)):
            return k
    return 0


# ------------------------------------------------------------------------------------------------------


def test_crossing_and_multiplets_match_naive_definitions():
    rng = random.Random(11)
    seen_pk = seen_nested = seen_multi = 0
    for _ in range(1500):
        s = random_structure(rng, rng.randint(0, 30))
        assert s.is_pseudoknotted == (not naive_is_nested(s.pairs))
        assert s.multiplet_positions() == naive_multiplet_positions(s.pairs)
        assert s.has_multiplets == bool(naive_multiplet_positions(s.pairs))
        seen_pk += s.is_pseudoknotted
        seen_nested += not s.is_pseudoknotted
        seen_multi += s.has_multiplets
    assert min(seen_pk, seen_nested, seen_multi) > 200  # the generators cover every case


def test_shared_endpoint_is_not_a_crossing():
    assert not Structure.from_pairs(9, [(1, 5), (5, 9)]).is_pseudoknotted
    assert not Structure.from_pairs(9, [(1, 9), (1, 5)]).is_pseudoknotted
    assert Structure.from_pairs(9, [(1, 5), (3, 9)]).is_pseudoknotted


def test_partner_array_and_partners():
    rng = random.Random(12)
    for _ in range(300):
        s = random_pseudoknotted(rng, rng.randint(1, 40))
        arr = s.partner_array()
        assert len(arr) == s.length + 1
        for x in range(1, s.length + 1):
            expected = [b for p in s.pairs for a, b in (p, p[::-1]) if a == x]
            assert s.partners().get(x, []) == expected
            assert arr[x] == (expected[0] if expected else 0)
    with pytest.raises(StructureFormatError) as e:
        Structure.from_pairs(10, [(2, 5), (5, 9)]).partner_array()
    assert e.value.position == 5


def test_invalid_pairs_rejected():
    with pytest.raises(StructureFormatError):
        Structure.from_pairs(5, [(3, 3)])
    with pytest.raises(StructureFormatError) as e:
        Structure(5, frozenset({(2, 6)}))
    assert e.value.position == 2
    with pytest.raises(StructureFormatError):
        Structure(5, frozenset({(4, 2)}))
    with pytest.raises(StructureFormatError):
        Structure(-1)
    assert Structure.from_pairs(5, [(4, 2)]).pairs == {(2, 4)}
    assert Structure.empty(3) == Structure(3, frozenset())


def test_bracket_levels_are_a_greedy_maximum_nested_decomposition():
    rng = random.Random(13)
    checked_deep = 0
    for _ in range(400):
        L = rng.randint(2, 22)
        s = random_pseudoknotted(rng, L, layers=rng.randint(1, 4))
        levels = bracket_levels(s.pairs)
        assert sorted(p for lv in levels for p in lv) == sorted(s.pairs)
        remaining = set(s.pairs)
        for lv in levels:
            assert lv == sorted(lv) and naive_is_nested(lv) and lv
            if len(remaining) <= 14:
                # each level is a maximum nested subset of what the lower levels left
                assert len(lv) == naive_max_nested_size(remaining)
                checked_deep += len(levels) > 1
            remaining -= set(lv)
        assert s.pseudoknot_order == max(len(levels) - 1, 0)
        assert (len(levels) > 1) == s.is_pseudoknotted
    assert checked_deep > 50


def test_bracket_levels_tie_break_and_limits():
    # Equal H-type stems: the 5' stem takes ().
    s = Structure.from_pairs(22, [(1, 16), (2, 15), (3, 14), (4, 13), (7, 22), (8, 21), (9, 20), (10, 19)])
    assert bracket_levels(s.pairs)[0] == [(1, 16), (2, 15), (3, 14), (4, 13)]
    # The larger stem takes () whatever its side.
    s = Structure.from_pairs(20, [(1, 12), (2, 11), (6, 18), (7, 17), (8, 16)])
    assert bracket_levels(s.pairs)[0] == [(6, 18), (7, 17), (8, 16)]
    assert bracket_levels([]) == []
    with pytest.raises(StructureFormatError) as e:
        bracket_levels([(1, 4), (4, 8)])
    assert e.value.position == 4
    # k mutually crossing pairs need k levels
    assert len(bracket_levels([(k, 31 + k) for k in range(1, 32)])) == 31
    assert len(BRACKETS) == 30 and BRACKETS[4] == ("A", "a") and BRACKETS[-1] == ("Z", "z")
