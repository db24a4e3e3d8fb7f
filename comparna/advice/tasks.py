"""Celery tasks of the advisor (queue ``advice``), thin: the work is in :mod:`comparna.advice.services`."""

from __future__ import annotations

from celery import shared_task
from celery.signals import celeryd_after_setup

from comparna.advice import services

ADVICE_QUEUE = "advice"


@celeryd_after_setup.connect
def consume_advice_queue(sender=None, instance=None, **_kwargs) -> None:
    """A worker that takes owners' test runs (queue ``testrun``) takes the advisor's queue too, whatever its
    ``-Q`` says: Kombu takes a worker's queues in turn, so a user's runs wait behind neither the prediction
    backlog nor the deployment's queue list."""
    queues = instance.app.amqp.queues
    if "testrun" in queues.consume_from and ADVICE_QUEUE not in queues.consume_from:
        queues.select_add(ADVICE_QUEUE)


@shared_task(acks_late=True, reject_on_worker_lost=True, queue=ADVICE_QUEUE, soft_time_limit=600,
             time_limit=660)
def work_out_query_task(query_id: int) -> str:
    """The evidence of one sequence (family, similar targets, matching rankings), then its runs sent."""
    query = services.work_out_query(query_id=query_id)
    return query.status if query is not None else "gone"


@shared_task(acks_late=True, reject_on_worker_lost=True, queue=ADVICE_QUEUE, soft_time_limit=660,
             time_limit=720)
def run_advice_method_task(run_id: int) -> str:
    """One method on one sequence in the sandbox (capped at ``TEST_RUN_TIME_LIMIT_S``)."""
    run = services.execute_run(run_id=run_id)
    return run.status if run is not None else "gone"


@shared_task(acks_late=True, queue="default", soft_time_limit=240, time_limit=300)
def delete_expired_advice_task() -> int:
    """Periodic: requests past their 7 days are deleted with their sequences and results."""
    return services.delete_expired_advice()


@shared_task(acks_late=True, queue="default", soft_time_limit=240, time_limit=300)
def sweep_stuck_advice_task() -> dict:
    """Periodic: runs and sequences no worker will finish are recorded as failed (never "running" forever)."""
    return services.sweep_stuck_advice()
