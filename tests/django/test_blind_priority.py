"""Blind targets jump the queue: with a backlog in front of them, their waiting predictions are sent first
until their week's deadline; afterwards (and once sent) they are left alone."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from comparna import pipeline
from comparna.blind import prerelease
from comparna.blind.models import BlindTarget, BlindWeek
from comparna.blind.priority import BLIND_RANK, prioritise
from comparna.models import Target
from predictors.catalogue import get_spec
from predictors.models import Prediction
from predictors.services import dispatch_predictions, queue_predictions, sync_predictors
from tests.factories import make_dataset, make_target

pytestmark = pytest.mark.django_db

UTC = dt.UTC
RELEASE = dt.date(2024, 1, 10)
DEADLINE = dt.datetime(2024, 1, 9, 22, 0, tzinfo=UTC)


@pytest.fixture
def sent(monkeypatch):
    out: list = []
    monkeypatch.setattr(pipeline, "predictions_queued", lambda *, prediction_ids: out.extend(prediction_ids))
    monkeypatch.setattr(pipeline, "dispatch_due", lambda: out.append("dispatch"))
    return out


def test_blind_predictions_are_sent_before_a_backlog_until_the_deadline(sent, settings):
    settings.CLOCK = f"{DEADLINE - dt.timedelta(days=2):%Y-%m-%dT%H:%M:%S}Z@{time.time():.3f}x1"
    settings.PREDICTION_DISPATCH_WINDOW = 8
    versions = sync_predictors(specs=[get_spec("RNAfold-MFE"), get_spec("LinearFold-V")])
    dataset = make_dataset()
    backlog = [make_target("GC" * (10 + k), "." * (20 + 2 * k), dataset=dataset) for k in range(20)]
    assert queue_predictions(versions=versions, targets=backlog) == 40
    week = prerelease.ensure_week(RELEASE)
    week.status = BlindWeek.Status.OPEN
    week.save()
    blind = []
    for k in range(3):
        sequence = "GGGAAACCC" * (3 + k)
        target = Target.objects.create(dataset=prerelease.ensure_blind_dataset(), source_id=f"9AB{k}_1",
                                       sequence=sequence, length=len(sequence))
        BlindTarget.objects.create(week=week, target=target, pdb_id=f"9AB{k}", entity_id="1",
                                   announced=sequence)
        blind.append(target)
    assert queue_predictions(versions=versions, targets=blind) == 6
    on_blind = Prediction.objects.filter(target__in=blind)
    waiting = Prediction.objects.filter(target__in=backlog, dispatched_at__isnull=True)
    # the scheduler alone gives them the backlog's front rank (taking turns with it), behind what was sent
    assert min(on_blind.values_list("schedule_rank", flat=True)) == min(
        waiting.values_list("schedule_rank", flat=True)
    )
    assert on_blind.filter(dispatched_at__isnull=True).count() == 6  # the window was full

    sent.clear()
    assert prioritise() == 6 and sent == ["dispatch"]
    assert set(on_blind.values_list("schedule_rank", flat=True)) == {BLIND_RANK}
    assert prioritise() == 0  # idempotent
    Prediction.objects.filter(dispatched_at__isnull=False).update(status=Prediction.Status.OK)  # drained
    sent.clear()
    dispatch_predictions()
    first = [x for x in sent if x != "dispatch"]
    assert set(first[:6]) == set(on_blind.values_list("pk", flat=True))

    # after the deadline a blind prediction is late anyway: it no longer jumps the queue
    late = make_target("GGGGAAAACCCC", "((((....))))", dataset=dataset)
    BlindTarget.objects.create(week=week, target=late, pdb_id="9ZZZ", entity_id="1", announced=late.sequence)
    queue_predictions(versions=versions, targets=[late])
    assert Prediction.objects.filter(target=late, dispatched_at__isnull=True).count() == 2  # window full
    settings.CLOCK = f"{DEADLINE + dt.timedelta(minutes=1):%Y-%m-%dT%H:%M:%S}Z@{time.time():.3f}x1"
    assert prioritise() == 0
