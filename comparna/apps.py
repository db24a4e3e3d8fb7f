from __future__ import annotations

from django.apps import AppConfig


class ComparnaConfig(AppConfig):
    name = "comparna"

    def ready(self) -> None:
        # Every Django process that sends tasks (web server, management commands, workers) needs the
        # configured Celery app as the current one; loading it here keeps it out of comparna/__init__.py.
        from comparna import celery  # noqa: F401
