from __future__ import annotations

from django.apps import AppConfig


class TalliesConfig(AppConfig):
    """Prediction tallies per dataset/subset, method version and state, refreshed by a periodic task."""

    name = "comparna.tallies"
    label = "tallies"
    default_auto_field = "django.db.models.BigAutoField"
