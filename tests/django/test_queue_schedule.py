"""queue_predictions: too-long targets recorded at once, the rest sent in schedule order through a bounded
window, and a method registered later sent first on the targets the others have already scored."""

from __future__ import annotations

import pytest
from django.utils import timezone

from comparna import pipeline
from predictors.catalogue import get_spec
from predictors.models import Prediction
from predictors.services import (
    dispatch_predictions,
    queue_predictions,
    requeue_stuck_predictions,
    sync_predictors,
)
from tests.factories import make_dataset, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """Every prediction id handed to the broker, in send order, and the dispatch messages among them."""
    out: list = []
    monkeypatch.setattr(pipeline, "predictions_queued", lambda *, prediction_ids: out.extend(prediction_ids))
    monkeypatch.setattr(pipeline, "dispatch_due", lambda: out.append("dispatch"))
    return out


def targets(n: int, *, long_every: int = 4, dataset_slug: str = "testset"):
    """n targets, every ``long_every``-th longer than HotKnots' 200-nt limit."""
    dataset = make_dataset(dataset_slug)
    out = []
    for k in range(n):
        length = 240 + k if k % long_every == 0 else 20 + 3 * k
        out.append(make_target("GC" * (length // 2) + "A" * (length % 2), "." * length, dataset=dataset))
    return out


def run(ids, status=Prediction.Status.OK):
    Prediction.objects.filter(pk__in=ids).update(status=status, finished_at=timezone.now())


def test_too_long_is_recorded_at_queue_time_and_never_sent(sent):
    versions = sync_predictors(specs=[get_spec("RNAfold-MFE"), get_spec("HotKnots")])
    ts = targets(8)
    created = queue_predictions(versions=versions, targets=ts)
    assert created == 16
    hot = Prediction.objects.filter(method_version__method__name="HotKnots")
    too_long = hot.filter(status=Prediction.Status.TOO_LONG)
    assert sorted(p.target.length for p in too_long) == sorted(t.length for t in ts if t.length > 200)
    p = too_long.first()
    assert p.finished_at is not None and p.limits == {"max_length": 200}
    assert p.error == f"sequence length {p.target.length} exceeds the limit of 200"
    queued = Prediction.objects.filter(status=Prediction.Status.QUEUED)
    assert queued.count() == 16 - too_long.count()
    assert sorted(sent) == sorted(queued.values_list("pk", flat=True))  # too long: no job, not queued
    assert set(too_long.values_list("pk", flat=True)).isdisjoint(sent)
    assert queue_predictions(versions=versions, targets=ts) == 0 and len(sent) == 14  # idempotent


def test_window_sends_in_schedule_order_and_late_method_catches_up_first(sent, settings):
    settings.PREDICTION_DISPATCH_WINDOW = 16  # two methods x one block of 8 targets
    a, b = sync_predictors(specs=[get_spec("RNAfold-MFE"), get_spec("LinearFold-V")])
    ts = targets(24, long_every=10**6)
    assert queue_predictions(versions=[a, b], targets=ts) == 48
    # Only the window was sent, with a dispatch message in its middle (more wait in the database).
    assert len([x for x in sent if x != "dispatch"]) == 16 and sent[8] == "dispatch"
    rows = {p.pk: p for p in Prediction.objects.all()}
    first = [x for x in sent if x != "dispatch"]
    expected = sorted(rows.values(), key=lambda p: (p.schedule_rank, p.method_version_id, p.pk))[:16]
    assert first == [p.pk for p in expected]
    assert Prediction.objects.filter(dispatched_at__isnull=True).count() == 32
    # The first block: both methods on the same 8 targets, one method's jobs together.
    assert [rows[x].method_version_id for x in first] == [a.pk] * 8 + [b.pk] * 8
    assert {rows[x].target_id for x in first[:8]} == {rows[x].target_id for x in first[8:]}
    assert dispatch_predictions() == 0  # the window is full
    run(first)
    sent.clear()
    assert dispatch_predictions() == 16
    second = [x for x in sent if x != "dispatch"]
    assert min(rows[x].schedule_rank for x in second) >= max(rows[x].schedule_rank for x in first)

    # Drain a few blocks: these targets are scored by both methods.
    run(second)
    scored = {rows[x].target_id for x in first + second}
    both = {t for t in scored if sum(rows[x].target_id == t for x in first + second) == 2}
    assert both
    # A method registered now is queued on every target: its first jobs are the targets already scored.
    sent.clear()
    specs = [get_spec("RNAfold-MFE"), get_spec("LinearFold-V"), get_spec("LinearFold-C")]
    (c,) = sync_predictors(specs=specs)[2:]
    assert queue_predictions(versions=[c], targets=ts) == 24
    late = [Prediction.objects.get(pk=x) for x in sent if x != "dispatch"]
    assert len(late) == 16
    head = late[: len(both)]
    assert {p.method_version_id for p in head} == {c.pk} and {p.target_id for p in head} == both


def test_sweep_resends_lost_messages_and_tops_up_the_window(sent, settings):
    settings.PREDICTION_DISPATCH_WINDOW = 4
    (a,) = sync_predictors(specs=[get_spec("RNAfold-MFE")])
    queue_predictions(versions=[a], targets=targets(10, long_every=10**6))
    first = [x for x in sent if x != "dispatch"]
    assert len(first) == 4
    sent.clear()
    # The broker lost the sent messages: after lost_after_s they are sent again (the window stays full).
    out = requeue_stuck_predictions(lost_after_s=0)
    assert out["resent"] == 4 and sorted(x for x in sent if x != "dispatch") == sorted(first)
    assert Prediction.objects.filter(dispatched_at__isnull=True).count() == 6


def test_a_dataset_queued_behind_a_backlog_takes_turns_with_it(sent, settings):
    """Issue 28: ArchiveII imported a minute after RNA STRAND got nothing for 35 minutes; now the second
    dataset's blocks share ranks with the first's from the first rank not yet sent."""
    settings.PREDICTION_DISPATCH_WINDOW = 16
    versions = sync_predictors(specs=[get_spec("RNAfold-MFE"), get_spec("LinearFold-V")])
    first = targets(40, long_every=10**6)
    assert queue_predictions(versions=versions, targets=first) == 80
    run([x for x in sent if x != "dispatch"])  # one block of both methods done
    front = Prediction.objects.filter(dispatched_at__isnull=True).order_by("schedule_rank")[0].schedule_rank
    second = targets(40, long_every=10**6, dataset_slug="second")  # another dataset, queued a while later
    assert {t.dataset_id for t in second} != {t.dataset_id for t in first}
    assert queue_predictions(versions=versions, targets=second) == 80
    ranks_first = set(Prediction.objects.filter(target__in=first, dispatched_at__isnull=True)
                      .values_list("schedule_rank", flat=True))
    ranks_second = set(Prediction.objects.filter(target__in=second).values_list("schedule_rank", flat=True))
    assert min(ranks_second) == front == min(ranks_first)
    # 40 targets each (5 blocks): the second's blocks side by side with the first's 4 left, then its last
    assert ranks_second == set(range(front, front + 5)) and ranks_first == set(range(front, front + 4))
    # what is sent next alternates between the datasets block by block, not one after the other
    run([x for x in sent if x != "dispatch"])
    sent.clear()
    while dispatch_predictions():
        run([x for x in sent if x != "dispatch"])
    order = [Prediction.objects.get(pk=x).target.dataset_id for x in sent if x != "dispatch"]
    assert len(order) + 32 >= Prediction.objects.filter(schedule_rank__gte=front).count()
    a, b = first[0].dataset_id, second[0].dataset_id
    for k in range(0, 64, 32):  # every rank: each method's jobs on a block of each dataset
        assert order[k : k + 32].count(a) == order[k : k + 32].count(b) == 16, order[k : k + 32]
