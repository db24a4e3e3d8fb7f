"""Group-sequential verdicts read the earlier looks' (t, n) out of the stored reports, never whole reports
(issue 28: a report at 100 methods is about 10 MB, a weekly dataset has hundreds of snapshots)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.services.pages.comparison import sequential_look
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from comparna.services.uncertainty import _pair_t, pair_history, sequential_for_pair
from tests.factories import make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db

REFERENCES = ["((((...)))).........", "(((...)))..........."]
PREDICTIONS = [
    "(((...)))...........",
    "((.....))...........",
    "....................",
    "(((....)))..........",
    "((((...)))).........",
]
# a whole report column in a select list: ``SELECT ..."report" [AS "x"] FROM`` or ``..."report", ...``
WHOLE_REPORT = re.compile(
    r'(?:SELECT|,)\s*(?:"\w+"\.)?"report"(?:\s+AS\s+"\w+")?\s*(?:,|FROM\b)', re.IGNORECASE
)


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def weekly():
    """A PDB subset ranked four times as it grows: the first look has 2 targets (no t statistic stored),
    the third method (a non-ASCII name) joins at the second, each later look has more common targets."""
    pdb = Dataset.objects.create(slug="pdb", name="PDB", kind=Dataset.Kind.PDB, definitions=["extended"])
    subset = Subset.objects.create(dataset=pdb, slug="all", name="All")
    methods = [make_method_version(name) for name in ("Alpha", "Beta", "Gämma")]
    snapshots = []
    k = 0
    for week, size in enumerate((2, 4, 5, 6)):
        for _ in range(size):
            target = make_target("GGGGAAACCCCAGGGAAACC", REFERENCES[k % 2], dataset=pdb)
            for offset, version in enumerate(methods if week else methods[:2]):
                predicted = PREDICTIONS[(k * (offset + 1) + 2 * offset) % len(PREDICTIONS)]
                score_prediction(prediction=make_prediction(version, target, predicted))
            k += 1
        snapshot, new = rank_subset(subset=subset, definition="extended", seed=3)
        assert new
        snapshots.append(snapshot)
    return subset, snapshots


def whole_report_verdicts(reports: list[dict]) -> dict:
    """Every pair's verdict over whole reports, as the looks were read before issue 28."""
    pairs = reports[-1]["pair_statistics"]["pairs"]
    return {
        a: {b: sequential_for_pair(series=[_pair_t(report, a, b) for report in reports]) for b in row}
        for a, row in pairs.items()
    }


def as_json(value) -> str:
    return json.dumps(value, sort_keys=True)  # NaN as "NaN": exact equality of every figure


def test_stored_verdicts_equal_those_of_the_whole_reports(weekly):
    subset, snapshots = weekly
    stored = RankingSnapshot.objects.filter(pk__in=[s.pk for s in snapshots]).order_by("computed_at", "pk")
    reports = list(stored.values_list("report", flat=True))
    assert [r["pair_statistics"]["pairs"]["Alpha"]["Beta"]["n"] for r in reports] == [2, 6, 11, 17]
    assert "paired" not in reports[0]["pair_statistics"]["pairs"]["Alpha"]["Beta"]
    assert "Gämma" not in reports[0]["pair_statistics"]["pairs"].get("Beta", {})
    looks = set()
    for k, report in enumerate(reports):
        assert as_json(report["sequential"]) == as_json(whole_report_verdicts(reports[: k + 1]))
        looks |= {v["looks"] for row in report["sequential"].values() for v in row.values() if v}
    assert looks == {1, 2, 3}  # the pairs have one to three looks
    assert {v["verdict"] for row in reports[-1]["sequential"].values() for v in row.values()} >= {"not yet"}


def test_history_and_one_pair_read_no_whole_report(weekly):
    subset, snapshots = weekly
    rows = subset.rankings.filter(definition="extended").order_by("computed_at", "pk")
    with CaptureQueriesContext(connection) as queries:
        history = pair_history(rows)
    assert len(history) == 4 and not any(WHOLE_REPORT.search(q["sql"]) for q in queries.captured_queries)
    with CaptureQueriesContext(connection) as queries:
        reports = list(rows.values_list("report", flat=True))  # the old way: the pattern sees it
    assert any(WHOLE_REPORT.search(q["sql"]) for q in queries.captured_queries)
    names = ["Alpha", "Beta", "Gämma"]
    for a in names:
        for b in names:
            if a != b:
                assert history.series(a, b) == [_pair_t(report, a, b) for report in reports]

    last = snapshots[-1]
    for a, b in (("Alpha", "Gämma"), ("Gämma", "Beta")):
        with CaptureQueriesContext(connection) as queries:
            look = sequential_look(snapshot=last, a=a, b=b)
        assert not any(WHOLE_REPORT.search(q["sql"]) for q in queries.captured_queries)
        expected = sequential_for_pair(series=[_pair_t(report, a, b) for report in reports])
        assert as_json(look) == as_json(expected) and look["looks"] == 3
