from __future__ import annotations

from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    """Dataset snapshots as one package: its model (table kept in the ``comparna`` app), archive format,
    export, restore, lifecycle, views, URLs, tasks, templates and commands."""

    name = "comparna.snapshots"
    label = "snapshots"
    verbose_name = "Dataset snapshots"
