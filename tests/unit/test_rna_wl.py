"""WL score: literal tuple relabelling vs the fast computation vs networkx's WL hashes vs (1 + 5f)/6."""

from __future__ import annotations

import math
import random
from collections import Counter

import networkx as nx
import pytest

from comparna.rna.formats import parse_dot_bracket
from comparna.rna.metrics import count_pairs
from comparna.rna.structure import Structure, StructureFormatError
from comparna.rna.wl import wl_histograms, wl_score, wl_score_exact
from tests.unit.test_rna_structure import (
    perturb,
    random_any,
    random_nested,
    random_pseudoknotted,
    random_structure,
)


def networkx_wl(a: Structure, b: Structure, h: int = 5) -> float:
    """WL subtree kernel from networkx's per-node WL hashes (an independent implementation).

    Fixed-width initial labels keep networkx's label concatenation unambiguous.
    """

    def hist(s: Structure) -> list[Counter]:
        g = nx.Graph()
        g.add_nodes_from((v, {"label": f"{v:06d}"}) for v in range(1, s.length + 1))
        g.add_edges_from(s.pairs)
        hashes = nx.weisfeiler_lehman_subgraph_hashes(g, node_attr="label", iterations=h)
        return [Counter(f"{v:06d}" for v in g)] + [Counter(hs[k] for hs in hashes.values()) for k in range(h)]

    ha, hb = hist(a), hist(b)

    def k(x, y):
        return sum(sum(n * cy[key] for key, n in cx.items()) for cx, cy in zip(x, y, strict=True))

    return k(ha, hb) / math.sqrt(k(ha, ha) * k(hb, hb))


def closed_form(a: Structure, b: Structure) -> float:
    pa, pb = a.partners(), b.partners()
    f = sum(pa.get(v) == pb.get(v) for v in range(1, a.length + 1)) / a.length
    return (1 + 5 * f) / 6


def test_fast_equals_literal_relabelling_on_thousands_of_pairs():
    rng = random.Random(41)
    multi = 0
    for k in range(2000):
        L = rng.randint(1, 40)
        a = random_structure(rng, L)
        b = perturb(rng, a) if k % 2 else random_structure(rng, L)
        fast, exact = wl_score(a, b), wl_score_exact(a, b)
        assert fast == pytest.approx(exact, abs=1e-12)
        assert 1 / 6 - 1e-12 <= fast <= 1 + 1e-12
        assert wl_score(b, a) == pytest.approx(fast, abs=1e-12)
        if not (a.has_multiplets or b.has_multiplets):
            assert fast == pytest.approx(closed_form(a, b), abs=1e-12)
        else:
            multi += 1
    assert multi > 500


def test_agrees_with_networkx_weisfeiler_lehman():
    rng = random.Random(42)
    for k in range(250):
        L = rng.randint(2, 30)
        gen = (random_nested, random_pseudoknotted, random_any)[k % 3]
        a = gen(rng, L)
        b = perturb(rng, a) if k % 2 else gen(rng, L)
        assert wl_score(a, b) == pytest.approx(networkx_wl(a, b), abs=1e-12)


def test_multiplets_make_partners_of_partners_matter():
    a = Structure.from_pairs(10, [(1, 5), (1, 8), (2, 9), (3, 7)])
    b = Structure.from_pairs(10, [(1, 5), (1, 8), (2, 9), (7, 10)])
    assert wl_score(a, b) == pytest.approx(networkx_wl(a, b))
    # the multiplet chain 1-5-9 is intact and unlinked to the change at 2, 3, 4: closed form holds
    c = Structure.from_pairs(9, [(1, 5), (5, 9), (2, 3)])
    d = Structure.from_pairs(9, [(1, 5), (5, 9), (3, 4)])
    assert wl_score(c, d) == pytest.approx((1 + 5 * 6 / 9) / 6)
    e = Structure.from_pairs(9, [(1, 5), (5, 9), (9, 2)])
    g = Structure.from_pairs(9, [(1, 5), (5, 9), (9, 3)])
    # by hand: 2, 3, 9 differ from h = 1 (6 of 9 nodes agree), 5 sees 9 at h = 2 (5 agree),
    # 1 sees 5 at h = 3 (4 agree); h = 0 always agrees (9)
    expected = (9 + 6 + 5 + 4 + 4 + 4) / 54
    assert wl_score(e, g) == pytest.approx(expected)
    assert wl_score(e, g) < closed_form(e, g)


def test_published_check_and_edges():
    ref = parse_dot_bracket("(((((....)))))......")
    pred = parse_dot_bracket("......(((((....)))))")
    assert wl_score(ref, pred) == pytest.approx(0.25)
    assert count_pairs(ref, pred).f1 == 0.0
    assert wl_score(ref, ref) == 1.0
    assert wl_score(ref, Structure(20)) == pytest.approx((1 + 5 * 10 / 20) / 6)
    assert wl_score(Structure(0), Structure(0)) == 1.0
    with pytest.raises(StructureFormatError):
        wl_score(Structure(3), Structure(4))


def test_histograms_share_one_label_table():
    a = parse_dot_bracket("((..))")
    b = parse_dot_bracket("(....)")
    ha, hb = wl_histograms([a, b])
    assert len(ha) == 6 and all(sum(h.values()) == 6 for h in ha + hb)
    assert ha[0] == hb[0]  # h = 0: positions
    assert sum((ha[1] & hb[1]).values()) == 4  # nodes 1, 3, 4, 6 keep their pairing state
