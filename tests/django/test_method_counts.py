"""The method page's counts come from the background tallies, said with when they were counted, and it lists
only the newest failures (issue 28): no request counts the method's predictions."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from comparna.services.pages.methods import (
    FAILURE_ROWS,
    _failures,
    method_counts,
    prediction_counts,
    prediction_origins,
)
from comparna.services.tallies import SERVICE_UPLOAD, refresh_tallies
from predictors.models import MethodVersion, Prediction
from tests.factories import make_method_version, make_target

pytestmark = pytest.mark.django_db

START = timezone.now() - dt.timedelta(days=2)


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def predict(version, target, status, k=0, **fields) -> Prediction:
    return Prediction.objects.create(method_version=version, target=target, status=status,
                                     finished_at=START + dt.timedelta(minutes=k), **fields)


@pytest.fixture
def method():
    """CountFold: its current version's computed, blind, service and self-reported structures, 25 failures
    and 2 queued; an older version's 3 failures; a version awaiting approval's 2 (not public)."""
    current = make_method_version("CountFold")
    method = current.method
    older = MethodVersion.objects.create(method=method, version="0", program="countfold", spec=current.spec,
                                         fingerprint="old", is_current=False, approved_at=timezone.now())
    review = MethodVersion.objects.create(method=method, version="2", program="countfold", spec=current.spec,
                                          fingerprint="new", is_current=False, pending_review=True)
    targets = [make_target("GCAUGCAU", "((....))") for _ in range(40)]
    for t in targets[:5]:
        predict(current, t, "ok", runner="sandbox")
    predict(current, targets[5], "ok", uploaded=True, runner="upload")  # blind
    predict(current, targets[6], "ok", uploaded=True, runner="upload")
    predict(current, targets[7], "ok", uploaded=True, runner=SERVICE_UPLOAD)  # a command: computed
    predict(current, targets[8], "ok", uploaded=True, runner="upload", self_reported=True)
    states = ("failed", "timeout", "unparsable", "infrastructure_error", "too_long")
    for k, t in enumerate(targets[10:35]):
        predict(current, t, states[k % 5], k=10 + k, error=f"reason {k}")
    for t in targets[35:37]:
        predict(current, t, "queued")
    for k, t in enumerate(targets[:3]):
        predict(older, t, "timeout", k=100 + k, error="old")  # the newest failures
    for t in targets[:2]:
        predict(review, t, "failed", k=200, error="private")
    return method


def live(method) -> dict:
    return {"predictions": prediction_counts(method), "origins": prediction_origins(method),
            "failures": dict(_failures(method).values_list("status").annotate(n=Count("id")).order_by())}


def test_the_counts_are_the_tallies_and_equal_the_live_ones(method):
    before = method_counts(method)  # no refresh yet: counted here
    assert before["counted_at"] is None and before == {**live(method), "counted_at": None}
    run = refresh_tallies()
    counted = method_counts(method)
    assert counted["counted_at"] == run.computed_at
    assert counted["predictions"] == live(method)["predictions"] == {
        "queued": 2, "ok": 8, "failed": 5, "timeout": 5, "too_long": 5, "unparsable": 5,
        "infrastructure_error": 5}
    assert counted["failures"] == live(method)["failures"] and sum(counted["failures"].values()) == 28
    assert counted["origins"] == prediction_origins(method)
    origins = {o["origin"]: o["n"] for o in counted["origins"]}
    assert origins == {"computed": 6, "blind": 2, "self_reported": 1}


def test_the_page_reads_the_tallies_says_when_and_lists_the_newest_failures(client, method):
    run = refresh_tallies()
    url = reverse("method-detail", args=[method.pk])
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    counting = [q["sql"] for q in queries.captured_queries
                if "COUNT(" in q["sql"].upper() and Prediction._meta.db_table in q["sql"]]
    assert counting == []  # no count of the method's predictions in the request
    at = f"counted at {run.computed_at:%H:%M} UTC"
    assert page.count(at) == 3  # the predictions' states, the origins, the failures
    table = page.split('id="failures-table"')[1].split("</table>")[0]
    rows = re.findall(r"<tr><td><a href=\"/targets/", table)
    assert len(rows) == FAILURE_ROWS
    assert f"The newest {FAILURE_ROWS} of 28 failed runs" in page
    assert "reason 24" in page and "reason 4" not in page and "private" not in page  # newest, public
    assert f'href="{reverse("method-predictions", args=[method.pk])}?status=timeout"' in page
    # a failure recorded since the last count: listed at once, counted at the next refresh
    target = make_target("GCAUGCAU", "((....))")
    predict(method.current_version, target, "failed", k=300, error="just now")
    page = client.get(url).content.decode()
    assert "just now" in page and f"The newest {FAILURE_ROWS} of 28 failed runs" in page
    refresh_tallies()
    assert "of 29 failed runs" in client.get(url).content.decode()


def test_before_the_first_count_the_page_counts_and_says_no_time(client, method):
    page = client.get(reverse("method-detail", args=[method.pk])).content.decode()
    # states in words since bd17209 (status_label: the state's label, "Failed", "too long")
    assert "counted at" not in page and "Failed: 5" in page and f"The newest {FAILURE_ROWS} of 28" in page
