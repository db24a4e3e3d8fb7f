"""Development methods have their own share of the prediction queue (issue 37, item 5): a method author's
first predictions start within a launch or two of registering, whatever the public backlog.

A new development method behind a full public window is sent at once on its own lane's queue; the workers of
``predict`` take that queue too, and Kombu takes a worker's queues in turn (tested here with the filesystem
transport ``make run`` uses): its first message is taken within the first two, behind hundreds of public ones.
"""

from __future__ import annotations

import types

import pytest
from celery import Celery
from kombu import Connection, Consumer, Exchange, Producer, Queue

from comparna import pipeline
from predictors.catalogue import get_spec
from predictors.models import Method, Prediction
from predictors.scheduling import LANES, lane_named, lane_window
from predictors.services import dispatch_predictions, queue_predictions, sync_predictors
from predictors.tasks import consume_every_lane
from tests.factories import make_dataset, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """Every prediction id handed to the broker, in send order, with its queue."""
    out: list = []

    def queued(*, prediction_ids, queue="predict"):
        out.extend((pk, queue) for pk in prediction_ids)

    monkeypatch.setattr(pipeline, "predictions_queued", queued)
    monkeypatch.setattr(pipeline, "dispatch_due", lambda: out.append(("dispatch", "predict")))
    return out


def backlog(n: int):
    dataset = make_dataset()
    return [make_target("GC" * (10 + k % 40), "." * (20 + 2 * (k % 40)), dataset=dataset) for k in range(n)]


def test_a_development_method_is_sent_at_once_behind_a_full_public_window(sent, settings):
    settings.PREDICTION_DISPATCH_WINDOW = 40
    public = sync_predictors(specs=[get_spec("RNAfold-MFE"), get_spec("LinearFold-V")])
    targets = backlog(300)
    assert queue_predictions(versions=public, targets=targets) == 600
    ids = [pk for pk, q in sent if pk != "dispatch"]
    assert len(ids) == 40 and {q for _, q in sent} == {"predict"}  # the public window is full
    assert dispatch_predictions() == 0
    # a development method registered now: 300 predictions, behind 560 public ones never sent
    (dev,) = sync_predictors(specs=[*(get_spec(n) for n in ("RNAfold-MFE", "LinearFold-V")),
                                    get_spec("LinearFold-C")])[2:]
    Method.objects.filter(pk=dev.method_id).update(visibility=Method.Visibility.DEVELOPMENT)
    sent.clear()
    assert queue_predictions(versions=[dev], targets=targets) == 300
    lane = lane_named("development")
    first = [(pk, q) for pk, q in sent if pk != "dispatch"]
    # sent in the same dispatch, all on its lane's queue, as many as its part of the window
    assert len(first) == lane_window(lane, 40) == 10 and {q for _, q in first} == {lane.queue}
    assert {Prediction.objects.get(pk=pk).method_version_id for pk, _ in first} == {dev.pk}
    # its lane is topped up on its own: the public window stays full, its own drains
    Prediction.objects.filter(pk__in=[pk for pk, _ in first]).update(status=Prediction.Status.OK)
    sent.clear()
    assert dispatch_predictions() == 10 and {q for pk, q in sent if pk != "dispatch"} == {"develop"}
    # a public method's own new version awaiting approval is in the development lane too
    Method.objects.filter(pk=dev.method_id).update(visibility=Method.Visibility.PUBLIC)
    sent.clear()
    assert dispatch_predictions() == 0  # now public: behind the full public window
    type(dev).objects.filter(pk=dev.pk).update(pending_review=True)
    Prediction.objects.filter(method_version=dev, status=Prediction.Status.QUEUED).update(dispatched_at=None)
    assert dispatch_predictions() == 10 and {q for pk, q in sent if pk != "dispatch"} == {"develop"}


def test_a_prediction_worker_takes_every_lane_and_a_testrun_worker_only_its_own():
    app = Celery("lanes", set_as_current=False)
    app.amqp.queues.select(["testrun", "predict"])
    consume_every_lane(sender="predict@h", instance=types.SimpleNamespace(app=app))
    assert set(app.amqp.queues.consume_from) == {"testrun", *(lane.queue for lane in LANES)}
    other = Celery("testrun", set_as_current=False)
    other.amqp.queues.select(["testrun"])
    consume_every_lane(sender="testrun@h", instance=types.SimpleNamespace(app=other))
    assert set(other.amqp.queues.consume_from) == {"testrun"}


def test_the_broker_takes_a_workers_queues_in_turn(tmp_path):
    """With 300 public messages queued first, the development lane's first message is among the first two
    taken (Kombu's fair cycle over a consumer's queues; the filesystem transport of ``make run``)."""
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder),
               "processed_folder": str(tmp_path / "processed"), "store_processed": False,
               "control_folder": str(tmp_path / "control"),  # Kombu's default is ./control
               "polling_interval": 0.01}
    exchange = Exchange("lanes", type="direct")
    queues = [Queue(name, exchange, routing_key=name) for name in ("predict", "develop")]
    taken: list[str] = []
    with Connection("filesystem://", transport_options=options) as conn:
        producer = Producer(conn.channel(), exchange=exchange)
        for q in queues:
            q(conn.default_channel).declare()
        for k in range(300):
            producer.publish({"n": k}, routing_key="predict")
        for k in range(5):
            producer.publish({"n": k}, routing_key="develop")

        def got(body, message):
            taken.append(message.delivery_info["routing_key"])
            message.ack()

        with Consumer(conn.channel(), queues=queues, callbacks=[got], prefetch_count=1):
            while len(taken) < 10:
                conn.drain_events(timeout=5)
    assert "develop" in taken[:2], taken
    assert taken.count("develop") == 5  # every other message until the lane is empty
