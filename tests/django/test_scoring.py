"""Scoring stored predictions and pooling their counts per subset."""

from __future__ import annotations

import math

import pytest

from comparna.models import Score, Subset
from comparna.services.scoring import score_prediction
from comparna.services.summaries import summarize_subset
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db

SEQ = "GGGAAACCCAGGGAAACCCA"  # 20 nt


def db(s: str) -> str:
    return s.ljust(len(SEQ), ".")


def pooled_mcc(tp, fn, fp, eps, tn):
    # SCIENCE.md §2, written out independently of comparna.rna.metrics.
    fpe = fp - eps
    den = math.sqrt((tp + fpe) * (tp + fn) * (tn + fpe) * (tn + fn))
    return 0.0 if den == 0 else (tp * tn - fpe * fn) / den


def test_score_prediction_counts_and_idempotency():
    target = make_target(SEQ, db("(((...)))"))
    version = make_method_version()
    prediction = make_prediction(version, target, db("((....))"))
    [score] = score_prediction(prediction=prediction)
    # Reference pairs 1-9 2-8 3-7; predicted 1-8 2-7: both inconsistent (1 and 2 pair elsewhere in R).
    assert (score.tp, score.fn, score.fp) == (0, 3, 2)
    assert (score.fp_inconsistent, score.fp_contradicting, score.fp_compatible) == (2, 0, 0)
    assert score.tn == 20 * 19 // 2 - 0 - 2 - 3
    score_prediction(prediction=prediction)
    assert Score.objects.count() == 1


def test_pooled_summary_sums_counts_before_scoring():
    version = make_method_version()
    refs = [db("(((...)))"), db("((((....))))"), db("...(((...)))")]
    preds = [db("(((...))).((...))"), db("((((....))))"), db("")]
    for r, p in zip(refs, preds, strict=True):
        score_prediction(prediction=make_prediction(version, make_target(SEQ, r), p))
    subset = Subset.objects.get(slug="all")
    summary = summarize_subset(subset=subset, definition="extended")
    [row] = summary.methods
    assert row.n_targets == 3
    rows = list(Score.objects.values_list("tp", "fn", "fp", "fp_compatible", "tn"))
    sums = [sum(col) for col in zip(*rows, strict=True)]
    assert row.mcc == pytest.approx(pooled_mcc(*sums))
    # Pooled is not the mean of per-target MCCs here.
    assert row.mcc != pytest.approx(sum(pooled_mcc(*r) for r in rows) / 3)
