"""Weisfeiler-Lehman graph-kernel score of two secondary structures (SCIENCE.md §2).

After the WL-kernel metric for RNA structures (Runge et al., 2023) with the WL subtree kernel of
Shervashidze et al. (JMLR 2011): one node per nucleotide, edges = base pairs only (no backbone, no edge
labels), initial node label = position index, h = 0..5 relabelling iterations, kernel = dot product of the
concatenated label histograms, normalised K(P,T) / sqrt(K(P,P)·K(T,T)).

Relabelling is exact: a new label is the tuple (own label, sorted neighbour labels), mapped to an integer by
a dictionary shared by both graphs, so two nodes get the same label only when their tuples are equal.
Without multiplets the score equals (1 + 5f)/6 with f the fraction of nucleotides whose pairing state
(partner or unpaired) is identical in both structures. :func:`wl_score_exact` is the literal algorithm;
:func:`wl_score` an equivalent linear-time computation (tested against it).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from comparna.rna.structure import Structure, StructureFormatError

__all__ = ["wl_score", "wl_score_exact", "wl_histograms"]

ITERATIONS = 5


def _adjacency(structure: Structure) -> list[list[int]]:
    adj: list[list[int]] = [[] for _ in range(structure.length)]
    for i, j in structure.pairs:
        adj[i - 1].append(j - 1)
        adj[j - 1].append(i - 1)
    return adj


def wl_histograms(structures: list[Structure], iterations: int = ITERATIONS) -> list[list[Counter[int]]]:
    """WL subtree label histograms (one Counter per iteration h = 0..iterations) for each structure.

    The label dictionary is shared by all the given structures, so histograms are comparable.
    """
    table: dict[object, int] = {}
    labels = []
    for s in structures:
        # h = 0: the position index itself.
        labels.append([table.setdefault(("pos", v), len(table)) for v in range(s.length)])
    adjs = [_adjacency(s) for s in structures]
    out: list[list[Counter[int]]] = [[Counter(lab)] for lab in labels]
    for _ in range(iterations):
        new_labels = []
        for lab, adj in zip(labels, adjs, strict=True):
            new = []
            for v, nbrs in enumerate(adj):
                key = (lab[v], tuple(sorted(lab[u] for u in nbrs)))
                new.append(table.setdefault(key, len(table)))
            new_labels.append(new)
        labels = new_labels
        for hist, lab in zip(out, labels, strict=True):
            hist.append(Counter(lab))
    return out


def _kernel(a: list[Counter[int]], b: list[Counter[int]]) -> int:
    return sum(sum(n * hb[k] for k, n in ha.items() if k in hb) for ha, hb in zip(a, b, strict=True))


def wl_score_exact(reference: Structure, prediction: Structure, *, iterations: int = ITERATIONS) -> float:
    """Normalised WL subtree kernel computed from the label histograms (handles multiplets).

    Returns 1.0 for two empty (length-0) structures.
    """
    _check_lengths(reference, prediction)
    if reference.length == 0:
        return 1.0
    hr, hp = wl_histograms([reference, prediction], iterations)
    k_rp = _kernel(hr, hp)
    return k_rp / float(np.sqrt(_kernel(hr, hr) * _kernel(hp, hp)))


def wl_score(reference: Structure, prediction: Structure, *, iterations: int = ITERATIONS) -> float:
    """WL score in [1/(h+1), 1] of ``prediction`` against ``reference`` (symmetric).

    Equal to :func:`wl_score_exact`, computed without building label tuples. Because h = 0 labels are the
    unique positions and every later label contains the previous one, a label identifies its node: labels
    of different nodes never coincide and each graph holds every label once. So K(P,P) = K(T,T) =
    (h+1)·L and K(P,T) counts the (node, iteration) couples whose label is the same in both graphs. Node v
    keeps equal labels at iteration h exactly when it had equal labels at h−1, has the same set of
    partners in both structures, and each of those partners had equal labels at h−1.

    Without multiplets this gives (1 + h·f)/(h + 1), f = fraction of nucleotides with the same partner
    or unpaired in both (SCIENCE.md §2), which is computed directly; with multiplets, partners of
    partners matter from h = 2 on and the recursion above is run.

    Parameters
    ----------
    reference, prediction : Structure
        Structures of the same length.
    iterations : int
        Number of WL iterations h (5 in SCIENCE.md §2).

    Returns
    -------
    float
        1.0 for two empty (length-0) structures.
    """
    _check_lengths(reference, prediction)
    L = reference.length
    if L == 0:
        return 1.0
    # A node's partner set differs between the structures exactly when it ends a pair of exactly one.
    changed = {x for p in reference.pairs ^ prediction.pairs for x in p}
    if not (reference.has_multiplets or prediction.has_multiplets):
        f = 1.0 - len(changed) / L
        return (1.0 + iterations * f) / (iterations + 1)
    eq = np.ones(L + 1, dtype=bool)
    eq[0] = False  # index 0 is not a nucleotide
    total = L  # h = 0: position labels always agree
    if iterations >= 1:
        eq[list(changed)] = False  # h = 1: same partner set
        total += int(eq.sum())
    # Nodes still equal have the same partners in both graphs, so the prediction's edges suffice.
    ends = np.array(sorted(prediction.pairs), dtype=np.int64).reshape(-1, 2)
    a, b = ends[:, 0], ends[:, 1]
    for _ in range(iterations - 1):
        bad = np.zeros(L + 1, dtype=bool)
        bad[a[~eq[b]]] = True
        bad[b[~eq[a]]] = True
        eq &= ~bad
        total += int(eq.sum())
    return total / ((iterations + 1) * L)


def _check_lengths(reference: Structure, prediction: Structure) -> None:
    if reference.length != prediction.length:
        raise StructureFormatError(
            f"reference length {reference.length} differs from prediction length {prediction.length}"
        )
