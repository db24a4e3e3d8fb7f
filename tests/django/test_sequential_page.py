"""The group-sequential boundary shown for comparisons on the weekly-growing PDB set."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.rna.group_sequential import sequential_boundary
from comparna.rna.sequential import z_from_t
from comparna.services.pages.comparison import sequential_look, sequential_paired_verdict
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    # pages and the API cache by snapshot pk, and pks are reused after each test's rollback
    cache.clear()
    yield
    cache.clear()


def snapshot(subset, n_targets: int, k: int, pair: dict | None = None) -> RankingSnapshot:
    report = {"methods": [], "verdicts": {}}
    if pair is not None:
        report["pair_statistics"] = {"pairs": {"Alpha": {"Beta": pair}}}
    return RankingSnapshot.objects.create(
        dataset=subset.dataset,
        subset=subset,
        definition="standard",
        seed=1,
        inputs_hash=f"h{k}",
        inputs={"targets": n_targets, "dataset_version": k},
        report=report,
    )


def test_looks_are_snapshots_where_the_pair_grew_and_the_verdict_is_the_first_crossing(settings):
    settings.PDB_PLANNED_TARGETS = 1000
    pdb = Dataset.objects.create(slug="pdb", name="PDB", kind=Dataset.Kind.PDB, definitions=["standard"])
    subset = Subset.objects.create(dataset=pdb, slug="all", name="All")
    # (common targets, t of Alpha − Beta); the repeated size is a recomputation, not a new look
    history = [(400, 2.5), (400, 2.6), (700, 3.6), (900, 2.2)]
    for k, (n, t) in enumerate(history):
        last = snapshot(subset, n, k, {"n": n, "paired": {"t": t}})
    look = sequential_look(snapshot=last, a="Alpha", b="Beta")
    boundary = sequential_boundary([0.4, 0.7, 0.9])
    assert look["looks"] == 3 and look["targets"] == 900 and look["planned"] == 1000
    assert look["boundary_z"] == pytest.approx(boundary.z[-1])
    assert boundary.z[0] > 2.5  # the first look did not cross, although p < 0.05 there
    z = z_from_t(3.6, 699)
    assert (z >= boundary.z[1]) and look["verdict"] == "different" and look["crossed_at_look"] == 2
    assert "O'Brien-Fleming" in look["method"]
    # seen from the other side: the same crossing, the sign of z reversed
    reverse = sequential_look(snapshot=last, a="Beta", b="Alpha")
    assert reverse["verdict"] == "different" and reverse["z"] == pytest.approx(-look["z"])
    # an older snapshot without stored statistics: the current statistic stands for the look
    old = snapshot(subset, 950, 9)
    assert sequential_look(snapshot=old, a="Alpha", b="Beta", current=(0.5, 950))["looks"] == 4

    static = Dataset.objects.create(
        slug="static", name="S", kind=Dataset.Kind.STATIC, definitions=["standard"]
    )
    other = Subset.objects.create(dataset=static, slug="all", name="All")
    assert sequential_look(snapshot=snapshot(other, 100, 9), a="Alpha", b="Beta", current=(5.0, 100)) is None


def test_verdict_on_a_sequential_dataset():
    assert sequential_paired_verdict("different", "different") == "different"
    assert sequential_paired_verdict("not yet", "different") == "not yet (boundary not crossed)"
    assert sequential_paired_verdict("not yet", "inconclusive") == "inconclusive"
    assert sequential_paired_verdict("no difference shown", "inconclusive") == "no difference shown"
    assert sequential_paired_verdict("no difference shown", "equivalent") == "equivalent"


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
    assert 'id="sequential"' in page and 'id="sequential-verdict"' in page
    assert 'id="sequential-method"' in page and "Brien-Fleming" in page
    assert 'id="unadjusted-verdict"' in page
    assert "The paired verdict above is the group-sequential one" in page
    assert snap.inputs["targets"] == 12
    # stored with the snapshot for every pair (the API serves it), and the clustered figures beside
    stored = snap.report["sequential"]["Alpha"]["Beta"]
    assert stored["looks"] == 1 and stored["verdict"] in ("not yet", "different")
    assert snap.report["pair_statistics"]["pairs"]["Alpha"]["Beta"]["n"] == 12
    assert 'id="clustered-t"' in page and 'id="equivalence-verdict"' in page
    rows = client.get(f"/api/rankings/{snap.pk}/verdicts/").json()
    assert {r["sequential_verdict"] for r in rows} == {stored["verdict"]}
