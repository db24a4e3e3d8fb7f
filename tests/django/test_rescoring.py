"""Bulk re-scoring after a reference changes: equal to per-prediction scoring, idempotent, nothing lost."""

from __future__ import annotations

import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comparna.models import ReferenceStructure, Score
from comparna.rna.canonical import structure_to_text
from comparna.rna.formats import write_dot_bracket
from comparna.rna.metric_registry import STORED_FIELDS
from comparna.services.rescoring import rescore_dataset
from comparna.services.scoring import score_prediction
from predictors.models import Prediction
from tests.factories import make_dataset, make_method_version, make_prediction, make_target
from tests.unit.test_rna_structure import perturb, random_nested

pytestmark = pytest.mark.django_db


def stored() -> dict:
    return {(s.prediction_id, s.definition): tuple(getattr(s, f) for f in STORED_FIELDS)
            for s in Score.objects.all()}


def populate(rng: random.Random, targets: int = 25):
    dataset = make_dataset("rescore-set")
    versions = [make_method_version(name) for name in ("Alpha", "Beta", "Gamma")]
    predictions = []
    for _ in range(targets):
        L = rng.randint(20, 60)
        seq = "".join(rng.choice("ACGU") for _ in range(L))
        ref = random_nested(rng, L)
        target = make_target(seq, write_dot_bracket(ref), dataset=dataset)
        for version in versions:
            predictions.append(make_prediction(version, target, write_dot_bracket(perturb(rng, ref,
                                                                                           allow_multiplets=False))))
    return dataset, predictions


def test_rescoring_after_a_reference_change_equals_scoring_each_prediction_and_is_idempotent():
    rng = random.Random(1419)
    dataset, predictions = populate(rng)
    for p in predictions:
        score_prediction(prediction=p)
    before = stored()
    # nothing changed: nothing written
    report = rescore_dataset(dataset=dataset, block=7)
    assert (report.created, report.updated, report.deleted) == (0, 0, 0)
    assert report.unchanged == report.compared == len(predictions) and stored() == before

    # references of some targets change (re-annotation), another target loses its reference, a score row
    # is missing (e.g. a crash after the prediction was stored)
    targets = sorted({p.target for p in predictions}, key=lambda t: t.pk)
    for target in targets[:5]:
        ref = target.references.get()
        new = perturb(rng, random_nested(rng, target.length), allow_multiplets=False)
        ref.pairs = structure_to_text(new)
        ref.save()
    targets[5].references.all().delete()
    Score.objects.filter(prediction=predictions[-1]).delete()
    seen = []
    report = rescore_dataset(dataset=dataset, block=7, progress=lambda *step: seen.append(step))
    assert seen[0] == (0, 25) and seen[-1] == (25, 25) and len(seen) == 5
    assert report.deleted == 3 and report.created == 1 and report.updated > 0 and not report.errors
    after = stored()

    # the reference answer: score every prediction one by one from scratch
    Score.objects.all().delete()
    for p in predictions:
        score_prediction(prediction=p)
    assert stored() == after  # identical values, bit for bit
    assert rescore_dataset(dataset=dataset).updated == 0


def test_unreadable_prediction_keeps_its_scores_and_others_are_rescored():
    rng = random.Random(1420)
    dataset, predictions = populate(rng, targets=4)
    for p in predictions:
        score_prediction(prediction=p)
    bad = predictions[0]
    Prediction.objects.filter(pk=bad.pk).update(pairs="1-2 3-999")  # beyond the sequence
    old = Score.objects.get(prediction=bad)
    ref = ReferenceStructure.objects.get(target=predictions[3].target)
    ref.pairs = ""
    ref.save()
    report = rescore_dataset(dataset=dataset)
    assert len(report.errors) == 1 and f"prediction {bad.pk}" in report.errors[0]
    assert Score.objects.get(prediction=bad).tp == old.tp
    assert Score.objects.get(prediction=predictions[3]).tp == 0 and report.updated >= 1


def test_command_progress_json_and_errors():
    rng = random.Random(1421)
    populate(rng, targets=3)
    out, err = StringIO(), StringIO()
    call_command("rescore", "rescore-set", "--json", stdout=out, stderr=err)
    first = json.loads(out.getvalue())
    assert first["created"] == 9 and first["targets"] == 3 and "comparna2013" in first["convention"]
    out = StringIO()
    call_command("rescore", "rescore-set", "--definition", "extended", stdout=out, stderr=StringIO())
    assert "0 created, 0 updated, 9 unchanged, 0 deleted" in out.getvalue()
    with pytest.raises(CommandError, match="no dataset 'nope'.*rescore-set"):
        call_command("rescore", "nope", stdout=StringIO(), stderr=StringIO())
