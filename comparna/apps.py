from __future__ import annotations

from django.apps import AppConfig


class ComparnaConfig(AppConfig):
    name = "comparna"

    def ready(self) -> None:
        from django.urls import register_converter

        from comparna.params import IdConverter

        # ``<id:pk>`` in every URLconf: bounded ASCII ids (comparna.params).
        register_converter(IdConverter, "id")
        # Every Django process that sends tasks (web server, management commands, workers) needs the
        # configured Celery app as the current one; loading it here keeps it out of comparna/__init__.py.
        from comparna import celery  # noqa: F401
