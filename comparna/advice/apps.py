from __future__ import annotations

from django.apps import AppConfig


class AdviceConfig(AppConfig):
    """The advisor: a user's sequences, what the benchmark knows of RNAs like them, and runs on them."""

    name = "comparna.advice"
    label = "advice"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comparna.advice import tasks  # noqa: F401 - registers the tasks and the worker signal
