"""Ranking snapshots from stored counts: engine input, immutability, recomputation only on changed inputs."""

from __future__ import annotations

import random

import pytest

from comparna.models import RankingSnapshot, Score, Subset
from comparna.rna.ranking import CountsTable, ranking_report
from comparna.services.rankings import rank_subset, recompute_rankings
from comparna.services.scoring import score_prediction
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db


def random_db(rng: random.Random, n: int) -> str:
    """A random nested structure as dot-bracket."""
    chars = ["."] * n
    for _ in range(n // 6):
        i = rng.randrange(0, n - 4)
        j = rng.randrange(i + 4, n)
        if chars[i] == "." and chars[j] == "." and all(c == "." for c in chars[i : j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)


@pytest.fixture
def scored_subset():
    rng = random.Random(7)
    seq = "GCAU" * 10
    methods = [make_method_version(name) for name in ("Alpha", "Beta", "Gamma")]
    targets = [make_target(seq, random_db(rng, 40)) for _ in range(14)]
    for n, target in enumerate(targets):
        ref = target.references.get().pairs
        for k, version in enumerate(methods):
            if k == 2 and n >= 8:
                continue  # Gamma predicts only 8 targets: "?" against the others
            # Alpha copies the reference half the time, so it should beat the random Beta.
            db = random_db(rng, 40)
            prediction = make_prediction(version, target, db)
            if k == 0 and n % 2 == 0:
                prediction.pairs = ref
                prediction.save()
            score_prediction(prediction=prediction)
    return Subset.objects.get(slug="all")


def test_snapshot_matches_engine_on_independently_built_table(scored_subset):
    snapshot, new = rank_subset(subset=scored_subset, definition="extended", seed=11)
    assert new
    rows = []
    for target in scored_subset.targets.order_by("source_id"):
        for p in target.predictions.all():
            s = p.scores.get()
            rows.append(
                (p.method_version.method.name, target.source_id, s.tp, s.fn, s.fp, s.fp_compatible, s.tn)
            )
    expected = ranking_report(CountsTable.from_rows(rows), seed=11)
    got = {m["method"]: m for m in snapshot.report["methods"]}
    for row in expected["methods"]:
        for key in ("rank", "wins", "losses", "draws", "unknown"):
            assert got[row["method"]][key] == row[key]
        assert got[row["method"]]["mcc"] == pytest.approx(row["mcc"])
    assert snapshot.report["verdicts"] == expected["verdicts"]
    assert snapshot.report["verdicts"]["Gamma"]["Alpha"] == "?"
    # the headline is the target-level verdict (no family declared or assigned: one target, one cluster);
    # the CompaRNA 2013 protocol is stored beside it, labelled, for the paper's tables
    assert snapshot.report["protocol"] == "target" and snapshot.report["clusters"] == 14
    assert snapshot.report["protocol_2013"]["label"] == "CompaRNA 2013 protocol"
    assert snapshot.report["protocol_2013"]["verdicts"] == expected["protocol_2013"]["verdicts"]
    assert snapshot.inputs["verdict_protocol"] == "target-level-1"
    # Robustness covers all 14 targets, Gamma's missing six as empty structures.
    robust = {r["method"]: r for r in snapshot.report["robustness"]}
    assert robust["Gamma"]["targets"] == 8
    assert snapshot.inputs["targets"] == 14 and set(snapshot.inputs["methods"]) == {"Alpha", "Beta", "Gamma"}


def test_snapshots_are_immutable_and_only_added_when_inputs_change(scored_subset):
    first, new = rank_subset(subset=scored_subset, definition="extended", seed=11)
    again, new_again = rank_subset(subset=scored_subset, definition="extended", seed=11)
    assert new and not new_again and again.pk == first.pk
    assert all(not new for _, new in recompute_rankings(seed=11))
    # A new prediction changes the inputs: a second snapshot, the first one untouched.
    report_before = first.report
    target = make_target("GCAU" * 10, random_db(random.Random(3), 40))
    target.subsets.add(scored_subset)
    score_prediction(prediction=make_prediction(make_method_version("Alpha"), target, "." * 40))
    second, new = rank_subset(subset=scored_subset, definition="extended", seed=11)
    assert new and second.pk != first.pk
    first.refresh_from_db()
    assert first.report == report_before
    assert RankingSnapshot.objects.count() == 2
    assert second.inputs["targets"] == 15


def test_rank_command_database_mode(scored_subset):
    import json
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("rank", "--dataset", "testset", "--seed", "11", "--json", stdout=out)
    [row] = json.loads(out.getvalue())
    assert row["new"] and row["subset"] == "all"
    snap = RankingSnapshot.objects.get(pk=row["snapshot"])
    assert row["verdicts"] == snap.report["verdicts"] and row["protocol"] == "target"
    out = StringIO()
    call_command("rank", "--dataset", "testset", "--protocol", "2013", "--json", stdout=out)
    assert json.loads(out.getvalue())[0]["verdicts"] == snap.report["protocol_2013"]["verdicts"]
    out = StringIO()
    args = ("--dataset", "testset", "--subset", "all", "--compare-protocols", "--json")
    call_command("rank", *args, stdout=out)
    top = json.loads(out.getvalue())[0]["top"]
    assert top[0]["target"]["method"] == snap.report["methods"][0]["method"]
    assert top[0]["protocol_2013"]["method"] == snap.report["protocol_2013"]["methods"][0]["method"]
    out = StringIO()
    call_command("rank", "--dataset", "testset", "--seed", "11", "--json", stdout=out)
    assert not json.loads(out.getvalue())[0]["new"]
    with pytest.raises(Exception, match="unknown dataset"):
        call_command("rank", "--dataset", "nope")


def test_snapshot_mean_mcc_and_bootstrap_ci(scored_subset):
    import numpy as np

    snapshot, _ = rank_subset(subset=scored_subset, definition="extended", seed=5)
    for row in snapshot.report["methods"]:
        scores = [s.mcc for s in Score.objects.filter(prediction__method_version__method__name=row["method"])]
        assert row["mean_mcc"] == pytest.approx(np.mean(scores))
        low, high = row["mean_mcc_ci"]
        assert min(scores) <= low <= row["mean_mcc"] <= high <= max(scores)
        assert row["mean_mcc_small"]  # fewer than 100 targets


def test_a_subset_nobody_scored_yet_ranks_under_both_protocols(db):
    """A dataset whose subset has targets but no score yet (a fresh import, an owner's first minutes) gives
    an empty target-level ranking, never one mistaken for a report stored before issue 27."""
    import json
    from io import StringIO

    from django.core.management import call_command

    from tests.factories import make_dataset

    make_target("GGGAAACCC", "(((...)))", dataset=make_dataset("emptyset"))
    for protocol in ("target", "2013"):
        out = StringIO()
        call_command("rank", "--dataset", "emptyset", "--protocol", protocol, "--json", stdout=out)
        [row] = json.loads(out.getvalue())
        assert row["methods"] == [] and row["protocol"] == protocol
