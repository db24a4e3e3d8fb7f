"""Celery tasks of the predictor layer (queue ``predict``)."""

from __future__ import annotations

from celery import shared_task

from predictors.services import InfrastructureError, execute_prediction


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


@shared_task(acks_late=True, queue="default", soft_time_limit=240, time_limit=300)
def requeue_stuck_predictions_task() -> dict:
    """Periodic sweep: predictions whose worker died or whose message was lost are queued again."""
    from predictors.services import requeue_stuck_predictions

    return requeue_stuck_predictions()
