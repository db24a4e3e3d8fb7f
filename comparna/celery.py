"""The Celery application (``celery -A comparna.celery:app worker|beat``).

Schedules live in ``<app>/scheduled.py`` and are collected into the settings; Django processes load this
module from :meth:`comparna.apps.ComparnaConfig.ready`.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "comparna.settings")

app = Celery("comparna")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
