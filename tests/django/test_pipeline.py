"""comparna.pipeline: what follows each event is sent by task name, after commit, to the right queue; a broker
that cannot be reached is logged, never turned into a failure of stored work."""

from __future__ import annotations

import logging
import socket

import pytest
from celery import Celery

from comparna import pipeline
from comparna.models import Target
from predictors.catalogue import get_spec
from predictors.models import Prediction
from predictors.services import queue_predictions, queue_unpredicted_targets, sync_predictors
from tests.factories import make_target
from tests.support.broker import recording_broker

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket is: nothing listens there


def test_unreachable_broker_is_logged_not_raised(django_capture_on_commit_callbacks, caplog):
    app = Celery("dispatch-test", broker=f"redis://127.0.0.1:{closed_port()}/0")
    app.conf.update(task_publish_retry=False, broker_connection_retry=False, broker_connection_timeout=1,
                    broker_connection_max_retries=0)

    @app.task(name="dispatch_test.noop")
    def noop(x):
        return x

    with caplog.at_level(logging.ERROR, logger="comparna.pipeline"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            pipeline.send_after_commit(pipeline.Step("dispatch_test.noop"), [(1,), (2,)], app=app)
    assert len(callbacks) == 1
    assert "could not send dispatch_test.noop (2 of 2 not sent)" in caplog.text


def test_nothing_is_sent_before_commit_or_when_rolled_back(tmp_path, django_capture_on_commit_callbacks):
    with recording_broker(tmp_path) as broker:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            pipeline.targets_created(target_ids=[3, 1, 2])
        assert broker.sent() == [] and len(callbacks) == 2
        for callback in callbacks:
            callback()
        sent = broker.sent()
    assert sorted((s.task, s.args, s.queue) for s in sent) == [
        ("ingest.tasks.assign_families_task", [[1, 2, 3]], "families"),
        ("predictors.tasks.queue_predictions_task", [[1, 2, 3], False], "default"),
    ]


def test_family_assignment_is_batched_and_each_event_names_its_step(
    tmp_path, django_capture_on_commit_callbacks
):
    ids = list(range(1, 251))
    with recording_broker(tmp_path) as broker:
        with django_capture_on_commit_callbacks(execute=True):
            pipeline.targets_created(target_ids=ids)
            pipeline.families_assigned(target_ids=[7, 5])
            pipeline.predictions_queued(prediction_ids=[11, 12])
            pipeline.dataset_changed(dataset_id=4)
            pipeline.snapshot_reserved(snapshot_id=9)
            pipeline.targets_created(target_ids=[])  # nothing new: nothing sent
        sent = [(s.task, s.args, s.queue) for s in broker.sent()]
    batches = sorted(s[1][0] for s in sent if s[0] == "ingest.tasks.assign_families_task")
    assert batches == [ids[:100], ids[100:200], ids[200:]]
    assert ("predictors.tasks.queue_predictions_task", [[5, 7], True], "default") in sent
    assert sorted(s for s in sent if s[0] == "predictors.tasks.run_prediction_task") == [
        ("predictors.tasks.run_prediction_task", [11], "predict"),
        ("predictors.tasks.run_prediction_task", [12], "predict"),
    ]
    assert ("comparna.snapshot_tasks.snapshot_if_changed_task", [4], "default") in sent
    assert ("comparna.snapshot_tasks.build_snapshot_task", [9], "default") in sent
    assert len(sent) == 1 + 3 + 1 + 2 + 1 + 1


def test_every_step_is_a_registered_task_with_the_queue_the_pipeline_uses():
    from comparna.celery import app

    app.loader.import_default_modules()
    steps = [v for v in vars(pipeline).values() if isinstance(v, pipeline.Step)]
    assert len(steps) == 9
    for step in steps:
        task = app.tasks[step.task]  # KeyError: a step names a task that does not exist
        assert (task.queue or "default") == step.queue, step


def test_unpredicted_targets_sweep_queues_only_targets_without_any_prediction(
    django_capture_on_commit_callbacks,
):
    versions = sync_predictors(specs=[get_spec("RNAfold-MFE"), get_spec("LinearFold-V")])
    lost, served = make_target("GGGAAACCC", "(((...)))"), make_target("GGGAAACCC", "(((...)))")
    with django_capture_on_commit_callbacks(execute=False):
        queue_predictions(versions=versions[:1], targets=[served])  # one method: not "unpredicted"
        created = queue_unpredicted_targets()
    assert created == 2
    names = Prediction.objects.filter(target=lost).values_list("method_version__method__name", flat=True)
    assert set(names) == {"RNAfold-MFE", "LinearFold-V"}
    assert Prediction.objects.filter(target=served).count() == 1
    assert Target.objects.filter(predictions__isnull=True).count() == 0
