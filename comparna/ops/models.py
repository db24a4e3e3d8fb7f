"""Two small tables: who is alive (heartbeats) and the gauges computed in the background for /metrics."""

from __future__ import annotations

from django.db import models


class Heartbeat(models.Model):
    """The last sign of life of one Celery worker or of beat, written on a timer by that process.

    One row per process name (``predict@host``, ``beat@host``); ``/readyz`` reads the rows seen recently, so
    its cost follows the number of processes, never the data.
    """

    class Role(models.TextChoices):
        WORKER = "worker"
        BEAT = "beat"

    role = models.CharField(max_length=16, choices=Role.choices)
    name = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=200, blank=True)
    pid = models.PositiveIntegerField(default=0)
    queues = models.JSONField(default=list, blank=True, help_text="Queues a worker consumes.")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["role", "name"]

    def __str__(self) -> str:
        return f"{self.name} seen {self.seen_at:%Y-%m-%d %H:%M:%S}"


class GaugeSnapshot(models.Model):
    """Values that would cost a scan to compute, computed by a periodic task and read by every scrape."""

    name = models.CharField(max_length=64, unique=True)
    computed_at = models.DateTimeField()
    duration_s = models.FloatField(default=0.0, help_text="How long the computation took.")
    values = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"{self.name} @ {self.computed_at:%Y-%m-%d %H:%M:%S}"
