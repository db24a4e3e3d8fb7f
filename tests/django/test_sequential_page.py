"""The group-sequential boundary shown for comparisons on the weekly-growing PDB set."""

from __future__ import annotations

import pytest
from django.urls import reverse

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.rna.statistics import sequential_boundary
from comparna.services.pages.comparison import sequential_look
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db


def snapshot(subset, n_targets: int, k: int) -> RankingSnapshot:
    return RankingSnapshot.objects.create(
        dataset=subset.dataset,
        subset=subset,
        definition="standard",
        seed=1,
        inputs_hash=f"h{k}",
        inputs={"targets": n_targets, "dataset_version": k},
        report={"methods": [], "verdicts": {}},
    )


def test_looks_are_snapshots_with_more_targets_and_match_the_engine(settings):
    settings.PDB_PLANNED_TARGETS = 1000
    pdb = Dataset.objects.create(slug="pdb", name="PDB", kind=Dataset.Kind.PDB, definitions=["standard"])
    subset = Subset.objects.create(dataset=pdb, slug="all", name="All")
    for k, n in enumerate([40, 40, 90, 150]):  # the repeated size is a recomputation, not a new look
        last = snapshot(subset, n, k)
    look = sequential_look(snapshot=last, t_statistic=2.5)
    boundary = sequential_boundary([0.04, 0.09, 0.15])
    assert look["looks"] == 3 and look["targets"] == 150 and look["planned"] == 1000
    assert look["z"] == pytest.approx(boundary.z[-1])
    assert look["z"] > 1.96  # early looks must demand more than the fixed-sample threshold
    assert look["crossed"] == (2.5 >= boundary.z[-1])
    assert "O'Brien-Fleming" in look["method"]

    static = Dataset.objects.create(
        slug="static", name="S", kind=Dataset.Kind.STATIC, definitions=["standard"]
    )
    other = Subset.objects.create(dataset=static, slug="all", name="All")
    assert sequential_look(snapshot=snapshot(other, 100, 9), t_statistic=5.0) is None


def test_comparison_page_states_the_boundary_for_pdb(client, settings):
    from comparna.services.rankings import rank_subset
    from comparna.services.scoring import score_prediction

    pdb = Dataset.objects.create(slug="pdb", name="PDB", kind=Dataset.Kind.PDB, definitions=["extended"])
    Subset.objects.create(dataset=pdb, slug="all", name="All")
    a, b = make_method_version("Alpha"), make_method_version("Beta")
    preds = [
        "(((...)))...........",
        "((.....))...........",
        "....................",
        "(((....)))..........",
        "((((...)))).........",
    ]
    for k in range(12):
        target = make_target(
            "GGGGAAACCCCAGGGAAACC", "((((...))))........." if k % 2 else "(((...)))...........", dataset=pdb
        )
        score_prediction(prediction=make_prediction(a, target, preds[k % 5]))
        score_prediction(prediction=make_prediction(b, target, preds[(k + 2) % 5]))
    snap, _ = rank_subset(subset=Subset.objects.get(dataset=pdb), definition="extended", seed=3)
    url = reverse("method-comparison", args=["pdb", "all", "extended", a.method.pk, b.method.pk])
    page = client.get(url).content.decode()
    assert 'id="sequential"' in page
    assert 'id="sequential-method"' in page and "Brien-Fleming" in page
    assert snap.inputs["targets"] == 12
