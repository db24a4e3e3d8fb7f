from __future__ import annotations

from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Health, metrics, heartbeats and backups (comparna.ops)."""

    name = "comparna.ops"
    label = "ops"
    default_auto_field = "django.db.models.BigAutoField"
