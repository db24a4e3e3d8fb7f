"""Every consumer of the scores reads them from the metric registry: the Score table, scoring, the ranking
report, pages, the API, snapshot archives and the batch re-scorer. Adding a metric to the registry without
its column (or the reverse) fails here."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import models

from comparna.api.serializers import RankingRowSerializer, ScoreSerializer
from comparna.models import Score
from comparna.rna.metric_registry import COUNT_FIELDS, METRIC_NAMES, POOLED, STORED_FIELDS
from comparna.rna.metrics_batch import score_structures
from comparna.rna.ranking import CountsTable
from comparna.rna.structure import Structure
from comparna.services.pages.common import SCORE_FIELDS as PAGE_SCORES
from comparna.services.rankings import compute_report
from comparna.services.scoring import score_prediction
from comparna.snapshots import columns
from tests.factories import make_method_version, make_prediction, make_target


def test_score_table_has_one_column_per_count_and_metric():
    number_fields = (models.FloatField, models.IntegerField)
    numbers = [f.name for f in Score._meta.get_fields() if isinstance(f, number_fields) and not f.primary_key]
    assert tuple(numbers) == STORED_FIELDS
    floats = {f.name for f in Score._meta.get_fields() if isinstance(f, models.FloatField)}
    assert floats == set(METRIC_NAMES)


def test_api_snapshots_and_pages_list_the_registry():
    assert ScoreSerializer.Meta.fields[-len(STORED_FIELDS):] == list(STORED_FIELDS)
    assert [c.name for c in columns.SCORE_VALUES] == list(STORED_FIELDS)
    assert PAGE_SCORES == tuple(m.name for m in POOLED)
    row_fields = list(RankingRowSerializer().fields)
    assert [f for f in row_fields if f in METRIC_NAMES] == [m.name for m in POOLED]


def test_ranking_report_rows_carry_every_pooled_metric():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 30, size=(3, 12, 5)).astype(np.int64)
    counts[..., 3] = counts[..., 3] % (counts[..., 2] + 1)  # compatible FPs are some of the FPs
    table = CountsTable(("A", "B", "C"), tuple(f"t{k}" for k in range(12)), counts, np.ones((3, 12), bool))
    identity = {"reference_pairs": [40] * 12, "candidate_pairs": [1000] * 12}
    report = compute_report(table, identity, seed=1)
    for row in report["methods"]:
        assert {m.name for m in POOLED} <= set(row)


def test_batch_scorer_computes_every_count_metric():
    s = Structure.from_pairs(20, [(1, 20), (2, 19)])
    _, scores = score_structures([s], [s], [0])
    assert set(scores) == {m.name for m in POOLED}


@pytest.mark.django_db
def test_scoring_stores_every_metric_of_the_registry():
    target = make_target("GGGGAAAACCCCAAAAGGGGAAAACCCC", "((((....))))....((((....))))")
    prediction = make_prediction(make_method_version(), target, "((((....))))........(....)..")
    (row,) = score_prediction(prediction=prediction)
    assert row.tp == 4 and row.fn == 4
    assert all(isinstance(getattr(row, f), int) for f in COUNT_FIELDS)
    assert 0 < row.mcc < 1 and 0 < row.wl < 1 and row.sensitivity == 0.5
