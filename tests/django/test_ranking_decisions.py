"""Issue 35 on the page and in the API: the share of a subset's pairs decided, the reasons of the "?", the
effect sizes beside each pair and the robustness ranking's n and intervals, read from the stored report."""

from __future__ import annotations

import html
import random

import pytest
from django.core.cache import cache
from django.urls import reverse

from comparna.models import Subset
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from tests.factories import make_dataset, make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db


def random_db(rng: random.Random, n: int) -> str:
    chars = ["."] * n
    for _ in range(n // 6):
        i = rng.randrange(0, n - 4)
        j = rng.randrange(i + 4, n)
        if chars[i] == "." and chars[j] == "." and all(c == "." for c in chars[i : j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)


@pytest.fixture
def open_pair():
    """12 targets, Up perfect on 7 and Down perfect on the other 5: "?" (open) for the only pair."""
    cache.clear()
    rng = random.Random(12)
    dataset = make_dataset("decisions")
    a, b = make_method_version("Up"), make_method_version("Down")
    for k in range(12):
        target = make_target("GCAU" * 10, random_db(rng, 40), dataset=dataset)
        ref = target.references.get().pairs
        pa = make_prediction(a, target, random_db(rng, 40))
        pb = make_prediction(b, target, random_db(rng, 40))
        perfect = pa if k < 7 else pb
        perfect.pairs = ref
        perfect.save()
        for p in (pa, pb):
            score_prediction(prediction=p)
    snap, _ = rank_subset(subset=Subset.objects.get(dataset=dataset, slug="all"), definition="extended")
    return snap


def test_the_report_counts_the_decided_pairs_and_their_reasons(open_pair):
    report = open_pair.report
    decisions = report["decisions"]
    assert decisions["pairs"] == 1 and decisions["unknown"] == 1 and decisions["won"] == 0
    assert decisions["reasons"] == {"open": 1} and decisions["share_unknown"] == 1.0
    assert not decisions["floor"]["fires"]  # 12 singleton targets: 2/2^12 < 0.001
    low, high = report["mean_interval"]["Up"]["Down"]
    assert report["mean_interval"]["Down"]["Up"] == [-high, -low]
    rows = report["robustness"]
    assert all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in rows)
    assert report["robustness_n"]["targets"] == 12


def test_the_page_says_how_many_pairs_are_decided_and_why_not(client, open_pair):
    page = client.get(reverse("subset-rankings", args=["decisions", "all", "extended"])).content.decode()
    block = html.unescape(page[page.index('id="decisions"') :])
    assert "1 pair: 0 (0%) won, 0 (0%) equivalent, 1 (100%) undecided" in block
    assert 'data-reason="open"' in block and "more targets or families would decide it" in block
    assert 'id="floor-note"' not in page
    assert "Rank = net wins" in page and "±0.02" in page


def test_the_api_gives_the_decisions_and_each_pair_reason_and_effects(client, open_pair):
    one = client.get(f"/api/rankings/{open_pair.pk}/", HTTP_ACCEPT="application/json").json()
    assert one["decisions"]["reasons"] == {"open": 1}
    assert one["robustness_n"]["targets"] == 12 and "rank_low" in one["robustness"][0]
    rows = client.get(f"/api/rankings/{open_pair.pk}/verdicts/", HTTP_ACCEPT="application/json").json()
    row = next(r for r in rows if r["method_a"] == "Up")
    assert row["verdict"] == "?" and row["reason"] == "open"
    assert row["mean_interval"]["low"] <= row["mean_difference"] <= row["mean_interval"]["high"]
    assert row["hodges_lehmann"]["low"] <= row["hodges_lehmann"]["estimate"] <= row["hodges_lehmann"]["high"]
    assert row["to_decide"]["targets"] > 0


def test_a_subset_of_three_families_says_so_once_and_shows_the_conditional_view(client):
    """Three declared families: the floor (2/2^3 > 0.001) makes every family-level verdict "?"; the page
    says why once and shows the within-these-families verdicts under their own heading and label."""
    cache.clear()
    rng = random.Random(5)
    dataset = make_dataset("threefam")
    good, bad = make_method_version("Good"), make_method_version("Bad")
    for k in range(30):
        target = make_target("GCAU" * 10, random_db(rng, 40), dataset=dataset)
        target.family, target.family_source = f"fam{k % 3}", "dataset"
        target.save()
        p_good = make_prediction(good, target, random_db(rng, 40))
        p_good.pairs = target.references.get().pairs  # Good is perfect everywhere
        p_good.save()
        p_bad = make_prediction(bad, target, "." * 40)
        for p in (p_good, p_bad):
            score_prediction(prediction=p)
    snap, _ = rank_subset(subset=Subset.objects.get(dataset=dataset, slug="all"), definition="extended")
    assert snap.report["verdicts"]["Good"]["Bad"] == "?"
    assert snap.report["verdict_reasons"]["Good"]["Bad"] == "floor"
    view = snap.report["within_families"]
    assert view["label"] == "for RNAs of these 3 families; does not generalise to other families"
    assert view["verdicts"]["Good"]["Bad"] == "+"
    page = html.unescape(
        client.get(reverse("subset-rankings", args=["threefam", "all", "extended"])).content.decode()
    )
    assert page.count('id="floor-note"') == 1 and "No family-level verdict is possible here" in page
    assert 'id="within-families"' in page and "for RNAs of these 3 families; does not generalise" in page
    one = client.get(f"/api/rankings/{snap.pk}/", HTTP_ACCEPT="application/json").json()
    assert one["within_families"]["verdicts"]["Good"]["Bad"] == "+"
    assert one["decisions"]["floor"]["fires"] is True
