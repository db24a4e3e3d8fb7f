"""Scoring of stored predictions against the stored references of their target."""

from __future__ import annotations

from django.db import transaction

from comparna.models import ReferenceStructure, Score
from comparna.rna.canonical import structure_from_text
from comparna.rna.metric_registry import scores_of
from comparna.rna.metrics import count_pairs
from predictors.models import Prediction


def reference_structure(reference: ReferenceStructure):
    return structure_from_text(reference.target.length, reference.pairs)


@transaction.atomic
def score_prediction(*, prediction: Prediction) -> list[Score]:
    """Store the counts of an ``ok`` prediction against every reference definition of its target.

    Idempotent: re-scoring replaces the counts in place (one row per prediction and definition).
    """
    if prediction.status != Prediction.Status.OK:
        return []
    target = prediction.target
    predicted = structure_from_text(target.length, prediction.pairs)
    stored = []
    for reference in target.references.all():
        ref = structure_from_text(target.length, reference.pairs)
        counts = count_pairs(ref, predicted)
        row, _ = Score.objects.update_or_create(
            prediction=prediction,
            definition=reference.definition,
            defaults={**counts.as_dict(), **scores_of(counts, ref, predicted)},
        )
        stored.append(row)
    return stored
