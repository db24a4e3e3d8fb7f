"""Periodic schedules of the predictor layer."""

from __future__ import annotations

import os

SCHEDULE: dict = {
    "requeue-stuck-predictions": {
        "task": "predictors.tasks.requeue_stuck_predictions_task",
        "schedule": float(os.environ.get("COMPARNA_SWEEP_INTERVAL_S", "300")),
        "options": {"queue": "default"},
    },
    # The stored queue is topped up as workers drain the window (a message at its middle); this is the
    # fallback when that message was lost. Queue "predict": it comes after what was already sent.
    "dispatch-predictions": {
        "task": "predictors.tasks.dispatch_predictions_task",
        "schedule": float(os.environ.get("COMPARNA_DISPATCH_INTERVAL_S", "60")),
        "options": {"queue": "predict"},
    },
    "close-expired-uploads": {
        "task": "predictors.tasks.close_expired_uploads_task",
        "schedule": float(os.environ.get("COMPARNA_UPLOAD_SWEEP_INTERVAL_S", "600")),
        "options": {"queue": "default"},
    },
    "queue-unpredicted-targets": {
        "task": "predictors.tasks.queue_unpredicted_targets_task",
        "schedule": float(os.environ.get("COMPARNA_UNPREDICTED_SWEEP_INTERVAL_S", "3600")),
        "options": {"queue": "default"},
    },
}
