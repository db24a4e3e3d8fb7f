"""Clustered uncertainty and equivalence beside CompaRNA's verdicts: in snapshots, on pages, in the API."""

from __future__ import annotations

import random

import pytest
from django.core.cache import cache
from django.urls import reverse

from comparna.models import Subset
from comparna.rna.formats import write_dot_bracket
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from comparna.services.uncertainty import cluster_labels
from ingest.models import FamilyAssignment
from tests.factories import make_dataset, make_method_version, make_prediction, make_target
from tests.unit.test_rna_structure import perturb, random_nested

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    # pages and the API cache by snapshot pk, and pks are reused after each test's rollback
    cache.clear()
    yield
    cache.clear()


def family(target, accession: str, version: str = "v1") -> None:
    FamilyAssignment.objects.create(target=target, rfam_version=version, accession=accession,
                                    family_id=accession and f"fam-{accession}", evalue=1e-10, score=50,
                                    coverage=0.9)


def build(rng: random.Random):
    """24 targets in 4 Rfam families + 4 without a family; Alpha and Twin predict alike, Beta worse."""
    dataset = make_dataset("famset")
    alpha, twin, beta = (make_method_version(n) for n in ("Alpha", "Twin", "Beta"))
    targets = []
    for k in range(28):
        L = rng.randint(30, 60)
        ref = random_nested(rng, L)
        seq = "".join(rng.choice("ACGU") for _ in range(L))
        target = make_target(seq, write_dot_bracket(ref), dataset=dataset)
        if k < 24:
            family(target, f"RF0000{k % 4}")
        targets.append(target)
        good = write_dot_bracket(perturb(rng, ref, allow_multiplets=False))
        for version, predicted in ((alpha, good), (twin, good),
                                   (beta, write_dot_bracket(random_nested(rng, L)))):
            score_prediction(prediction=make_prediction(version, target, predicted))
    return dataset, targets, (alpha.method, twin.method, beta.method)


def test_cluster_labels_use_the_latest_family_else_the_sequence_cluster():
    rng = random.Random(1)
    dataset, targets, _ = build(rng)
    family(targets[0], "", version="v2")  # re-assigned under a newer Rfam: no family any more
    labels = cluster_labels((t.pk, t.source_id) for t in targets)
    assert labels[targets[0].pk] == f"seq:{targets[0].source_id}"
    # RF00001 is 5S rRNA: labelled as the canonical family, the same cluster as a declared "5S rRNA"
    assert labels[targets[1].pk] == "5S rRNA"
    assert labels[targets[2].pk] == "Rfam:RF00002"
    assert labels[targets[27].pk] == f"seq:{targets[27].source_id}"


def test_snapshot_pages_and_api_show_clustered_figures_beside_the_verdict(client):
    rng = random.Random(2)
    dataset, targets, (alpha, twin, beta) = build(rng)
    snap, _ = rank_subset(subset=Subset.objects.get(dataset=dataset), definition="extended", seed=4)
    # stored with the snapshot
    assert snap.inputs["clusters"].count("Rfam:RF00000") == 6 and len(set(snap.inputs["clusters"])) == 8
    stats = snap.report["pair_statistics"]
    assert stats["clusters"] == 8 and stats["delta"] == 0.01
    same = stats["pairs"]["Alpha"]["Twin"]["equivalence"]
    assert same["estimate"] == 0 and same["low"] == same["high"] == 0
    assert same["verdict"] == "practically equal"
    worse = stats["pairs"]["Alpha"]["Beta"]["equivalence"]
    assert worse["low"] > 0.01 and worse["verdict"] == "practically different"
    assert "sequential" not in snap.report  # a static dataset: one look
    rows = {r["method"]: r for r in snap.report["methods"]}
    low, high = rows["Alpha"]["mean_mcc_ci_clustered"]
    assert rows["Alpha"]["clusters"] == 8 and low < rows["Alpha"]["mean_mcc"] < high

    # API: beside each verdict, the equivalence, the clustered MCC difference and no sequential verdict
    data = client.get(f"/api/rankings/{snap.pk}/verdicts/").json()
    by_pair = {(r["method_a"], r["method_b"]): r for r in data}
    assert by_pair[("Alpha", "Twin")]["equivalence"] == "practically equal"
    ab, ba = by_pair[("Alpha", "Beta")], by_pair[("Beta", "Alpha")]
    assert ab["mcc_difference"]["estimate"] == pytest.approx(-ba["mcc_difference"]["estimate"])
    assert ab["mcc_difference"]["low"] == pytest.approx(-ba["mcc_difference"]["high"])
    assert ab["sequential_verdict"] is None and ab["verdict"] in "+-=?"

    matrix = client.get(reverse("ranking-matrix", args=[dataset.slug, "all", "extended"])).content.decode()
    assert 'id="equivalence-note"' in matrix and matrix.count('class="eq"') == 2  # the note and Alpha/Twin
    ranking = client.get(reverse("subset-rankings", args=[dataset.slug, "all", "extended"])).content.decode()
    # Since f71ebb7 (issue 35) 8 families cannot decide 3 pairs (floor 3*2/2^8 >= 0.001): no method is ranked,
    # so no row carries its "families: [..]" interval (test_views_pages checks that cell on a ranked subset)
    assert 'id="floor-note"' in ranking and 'id="not-ranked-list"' in ranking and "families: [" not in ranking
    assert 'id="within-families"' in ranking  # the conditional view where the floor fires (831b28b)
    assert "resampling whole families (declared by the dataset, else Rfam" in ranking
    assert 'id="clusters-count">8<' in ranking  # 4 Rfam families + 4 targets on their own
    page = client.get(
        reverse("method-comparison", args=[dataset.slug, "all", "extended", alpha.pk, beta.pk])
    ).content.decode()
    assert 'id="equivalence-verdict">practically different<' in page
    assert 'id="clustered-t"' in page and "(7 df)" in page  # 8 clusters - 1
    assert 'id="sequential"' not in page and "Families / clusters as units (8)" in page


def test_declared_families_are_the_clusters_without_any_rfam_assignment():
    """Issue 27: 42 SRP, 24 5S and 6 tRNA targets declared by their dataset are 3 clusters, not 72."""
    rng = random.Random(4)
    dataset = make_dataset("declared")
    alpha, beta = (make_method_version(n) for n in ("Alpha", "Beta"))
    targets = []
    for family_label, count in (("SRP RNA", 42), ("5S rRNA", 24), ("tRNA", 6)):
        for _ in range(count):
            L = rng.randint(30, 50)
            ref = random_nested(rng, L)
            target = make_target("".join(rng.choice("ACGU") for _ in range(L)), write_dot_bracket(ref),
                                 dataset=dataset)
            target.family, target.family_source = family_label, "dataset"
            target.save(update_fields=["family", "family_source"])
            targets.append(target)
            for version in (alpha, beta):
                predicted = write_dot_bracket(perturb(rng, ref, allow_multiplets=False))
                score_prediction(prediction=make_prediction(version, target, predicted))
    # one target also has an Rfam assignment: the dataset's own family still decides
    family(targets[0], "RF00005")
    assert not FamilyAssignment.objects.exclude(target=targets[0]).filter(target__dataset=dataset).exists()
    labels = cluster_labels((t.pk, t.source_id) for t in targets)
    assert set(labels.values()) == {"SRP RNA", "5S rRNA", "tRNA"}
    snap, _ = rank_subset(subset=Subset.objects.get(dataset=dataset, slug="all"), definition="extended")
    assert snap.report["clusters"] == 3
    assert snap.report["pair_clusters"]["Alpha"]["Beta"] == 3
    assert snap.report["pair_statistics"]["clusters"] == 3
    # three families are three signs: no verdict at p < 0.001 can come out of them, whatever the 72 targets
    assert snap.report["verdicts"]["Alpha"]["Beta"] in ("=", "?")
