"""Sfold's decision rule for a sample of structures: cluster it, predict the centroid of the largest cluster.

Ding, Chan & Lawrence, RNA 11:1157-1166 (2005) ("RNA secondary structure prediction by centroids in a
Boltzmann weighted ensemble") and Chan, Lawrence & Ding, Bioinformatics 21:3926-3928 (2005) (the Sfold
clustering module): a statistical sample of 1000 structures is drawn from the Boltzmann ensemble (Ding &
Lawrence, Nucleic Acids Res 31:7280-7301, 2003), clustered hierarchically with the base-pair distance, the
number of clusters chosen by the Calinski-Harabasz index (Calinski & Harabasz, Commun Stat 3:1-27, 1974),
at most 20 clusters, and the prediction is the centroid of the cluster with the highest probability — the
most populated one, every sampled structure having weight 1/n. The centroid of a set of structures holds
the pairs present in more than half of them.

Implementation notes. A structure is the 0/1 vector of its base pairs; the squared Euclidean distance of
two such vectors is their base-pair distance, so Ward's minimum-variance criterion (Ward, J Am Stat Assoc
58:236, 1963) and the Calinski-Harabasz index (a ratio of between- to within-cluster sums of squares) are
both computed exactly from the base-pair distances. Ties are broken deterministically (fewest clusters;
then the cluster whose first member comes first in the sample), so a seeded sample gives one prediction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.sparse import csr_matrix
from scipy.spatial.distance import squareform

Pair = tuple[int, int]
MAX_CLUSTERS = 20


@dataclass(frozen=True)
class Clustering:
    """Result of :func:`cluster_sample`: ``labels[k]`` is the cluster (1-based) of sample ``k``."""

    labels: tuple[int, ...]
    n_clusters: int
    ch_index: float | None  # None when every sampled structure is the same (a single cluster)

    def sizes(self) -> list[int]:
        counts = Counter(self.labels)
        return [counts[c] for c in range(1, self.n_clusters + 1)]


def base_pair_distances(structures: Sequence[frozenset[Pair]]) -> np.ndarray:
    """Square matrix of base-pair distances |A Δ B| between the sampled structures."""
    index: dict[Pair, int] = {}
    rows, cols = [], []
    for k, pairs in enumerate(structures):
        for pair in pairs:
            rows.append(k)
            cols.append(index.setdefault(pair, len(index)))
    x = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(structures), max(len(index), 1)))
    shared = (x @ x.T).toarray()
    sizes = np.diag(shared)
    return sizes[:, None] + sizes[None, :] - 2 * shared


def calinski_harabasz(d2: np.ndarray, labels: np.ndarray) -> float:
    """CH index from squared distances: (B / (k - 1)) / (W / (n - k)); +inf when W = 0 < B.

    W = sum over clusters of (sum of within-cluster squared distances) / (2 n_c), the total T likewise over
    all points, and B = T - W (Huygens' decomposition of the sum of squares)."""
    n = len(labels)
    clusters = np.unique(labels)
    k = len(clusters)
    total = d2.sum() / (2 * n)
    within = sum(d2[np.ix_(labels == c, labels == c)].sum() / (2 * np.sum(labels == c)) for c in clusters)
    between = total - within
    if within <= 0:
        return float("inf") if between > 0 else 0.0
    return float((between / (k - 1)) / (within / (n - k)))


def cluster_sample(structures: Sequence[frozenset[Pair]], max_clusters: int = MAX_CLUSTERS) -> Clustering:
    """Ward clustering of the sample, cut where the Calinski-Harabasz index is highest (2..max_clusters)."""
    n = len(structures)
    distinct = len(set(structures))
    if distinct == 1 or n < 3:
        return Clustering(labels=(1,) * n, n_clusters=1, ch_index=None)
    d2 = base_pair_distances(structures).astype(float)
    tree = linkage(squareform(np.sqrt(np.maximum(d2, 0.0)), checks=False), method="ward")
    best: tuple[float, int, np.ndarray] | None = None
    for k in range(2, min(max_clusters, distinct, n - 1) + 1):
        labels = fcluster(tree, k, criterion="maxclust")
        if len(np.unique(labels)) < 2:
            continue
        ch = calinski_harabasz(d2, labels)
        if best is None or ch > best[0]:
            best = (ch, k, labels)
    if best is None:
        return Clustering(labels=(1,) * n, n_clusters=1, ch_index=None)
    ch, _k, labels = best
    # Renumber clusters by first appearance in the sample, so labels do not depend on SciPy's numbering.
    order: dict[int, int] = {}
    for label in labels:
        order.setdefault(int(label), len(order) + 1)
    return Clustering(labels=tuple(order[int(x)] for x in labels), n_clusters=len(order), ch_index=ch)


def centroid(structures: Sequence[frozenset[Pair]]) -> list[Pair]:
    """Pairs present in more than half of ``structures`` (Ding et al. 2005); a valid nested structure."""
    counts = Counter(p for s in structures for p in s)
    return sorted(p for p, c in counts.items() if 2 * c > len(structures))


def largest_cluster_centroid(structures: Sequence[frozenset[Pair]]) -> tuple[list[Pair], Clustering]:
    """Sfold's prediction: the centroid of the most populated cluster (first-appearing on a tie)."""
    clustering = cluster_sample(structures)
    sizes = clustering.sizes()
    chosen = 1 + max(range(clustering.n_clusters), key=lambda c: (sizes[c], -c))
    members = [s for s, label in zip(structures, clustering.labels, strict=True) if label == chosen]
    return centroid(members), clustering


def pair_frequencies(structures: Sequence[frozenset[Pair]]) -> dict[Pair, float]:
    """Fraction of the sample holding each pair: the sample's estimate of base-pair probabilities."""
    counts = Counter(p for s in structures for p in s)
    return {p: c / len(structures) for p, c in counts.items()}
