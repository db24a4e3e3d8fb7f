"""The Celery application (``celery -A comparna.celery:app worker|beat``).

Schedules live in ``<app>/scheduled.py`` and are collected into the settings; Django processes load this
module from :meth:`comparna.apps.ComparnaConfig.ready`.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger

from comparna.ops.logs import use_json_formatter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "comparna.settings")

app = Celery("comparna")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Every worker records its heartbeat on a timer (comparna/ops/heartbeats.py; loaded by name, so that the
# Celery app imports no model code) ...
app.steps["worker"].add("comparna.ops.heartbeats:HeartbeatStep")
# ... and writes the JSON log lines of the settings' LOGGING (COMPARNA_LOG_FORMAT).
after_setup_logger.connect(use_json_formatter, weak=False)
after_setup_task_logger.connect(use_json_formatter, weak=False)
