from __future__ import annotations

from django.apps import AppConfig


class BlindConfig(AppConfig):
    """The blind track: targets from the wwPDB's Saturday pre-release sequences, predictions frozen and
    committed before the Wednesday release, then linked to the released chains, scored and ranked."""

    name = "comparna.blind"
    label = "blind"
    verbose_name = "Blind track"
    default_auto_field = "django.db.models.BigAutoField"
