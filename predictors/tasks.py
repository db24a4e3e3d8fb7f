"""Celery tasks of the predictor layer (queue ``predict``)."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import celeryd_after_setup, worker_process_init, worker_ready

from predictors.execution import InfrastructureError, execute_prediction
from predictors.scheduling import LANES
from predictors.services import (
    queue_predictions_on,
    queue_unpredicted_targets,
    requeue_stuck_predictions,
)
from predictors.webservices import close_expired_uploads

log = logging.getLogger(__name__)


@celeryd_after_setup.connect
def consume_every_lane(sender=None, instance=None, **_kwargs) -> None:
    """A worker that takes the ``predict`` queue takes every lane's queue (``predictors.scheduling.LANES``)
    too, whatever its ``-Q`` says: Kombu takes a worker's queues in turn, so a lane with work waiting (a
    development method's first predictions) is served within a launch or two of the public backlog, and a
    deployment that lists only ``predict`` cannot leave a lane without a worker."""
    queues = instance.app.amqp.queues
    if "predict" not in queues.consume_from:
        return
    for lane in LANES:
        if lane.queue not in queues.consume_from:
            queues.select_add(lane.queue)


@worker_process_init.connect
def clean_leftovers_on_start(**_kwargs) -> None:
    """Each new pool process (also one replacing a killed child) removes the run dirs and cgroups of
    workers known dead, killing whatever still runs in those cgroups."""
    _clean_leftovers()


def _clean_leftovers() -> None:
    """Remove leftovers of dead workers; a failure is logged, never raised (it must not stop a worker's
    start or a sweep: the next one tries again)."""
    from predictors.core.workspace import clean_leftovers

    try:
        removed = clean_leftovers()
    except Exception:  # noqa: BLE001 - see the docstring
        log.exception("cleaning leftovers of dead workers failed")
        return
    if any(removed.values()):
        log.warning("removed leftovers of dead workers: %s", removed)


@worker_ready.connect
def clean_container_leftovers_on_start(**_kwargs) -> None:
    """Containers outlive a killed engine client; the worker's main process removes those of dead runs."""
    from predictors.core.container import clean_container_leftovers

    n = clean_container_leftovers()
    if n:
        log.warning("removed %d containers of dead workers", n)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    queue="predict",
    autoretry_for=(InfrastructureError,),
    retry_backoff=5,
    retry_backoff_max=300,
    max_retries=5,
    soft_time_limit=3300,
    time_limit=3600,
)
def run_prediction_task(self, prediction_id: int) -> str:
    """Run one prediction; predictor failures are recorded outcomes and are never retried."""
    return execute_prediction(prediction_id=prediction_id).status


@shared_task(acks_late=True, queue="predict", soft_time_limit=240, time_limit=300)
def dispatch_predictions_task() -> int:
    """Send the next queued predictions in schedule order (predictors.scheduling) as the window drains."""
    from predictors.services import dispatch_predictions

    return dispatch_predictions()


@shared_task(acks_late=True, queue="default", soft_time_limit=240, time_limit=300)
def requeue_stuck_predictions_task() -> dict:
    """Periodic sweep: predictions whose worker died or whose message was lost are queued again (after
    removing what dead workers left behind, which never stops the sweep)."""
    _clean_leftovers()
    return requeue_stuck_predictions()


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def queue_predictions_task(target_ids: list[int], comparative_only: bool = False) -> int:
    """Queue the current version of every active method (or only the comparative ones) on new targets."""
    return queue_predictions_on(target_ids=target_ids, comparative_only=comparative_only)


@shared_task(acks_late=True, queue="default", soft_time_limit=1700, time_limit=1800)
def queue_unpredicted_targets_task() -> int:
    """Periodic sweep: targets without any prediction (their pipeline message was lost) are queued."""
    return queue_unpredicted_targets()


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    queue="testrun",
    # The run itself is capped at settings.TEST_RUN_TIME_LIMIT_S (60 s by default, at most 10 min).
    soft_time_limit=660,
    time_limit=720,
)
def run_test_task(trial_id: str) -> str:
    """Run an admin test run (predictors.trials) and store its result for the polling page."""
    from predictors.trials import execute_test_run

    return execute_test_run(trial_id=trial_id).status


@shared_task(acks_late=True, queue="default", soft_time_limit=240, time_limit=300)
def close_expired_uploads_task() -> int:
    """Periodic sweep: web-service jobs whose upload window closed without an upload become ``timeout``."""
    return close_expired_uploads()
