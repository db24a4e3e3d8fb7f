"""Advisor requests: private, behind an unguessable token, deleted after :data:`KEEP_DAYS` days.

Nothing here is linked from a dataset, a ranking or a snapshot: a request's sequences are read only by its
own page and its own runs.
"""

from __future__ import annotations

from django.db import models

KEEP_DAYS = 7


class Status(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class AdviceRequest(models.Model):
    """One paste of 1–10 sequences; its page is ``/advice/<token>/`` until ``expires_at``."""

    token = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(help_text="The project clock's time (comparna.clock).")
    expires_at = models.DateTimeField(db_index=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    chosen = models.JSONField(default=list, blank=True, help_text="Ids of the methods the user ticked.")
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"], name="advice_request_open")]

    def __str__(self) -> str:
        return f"advice request {self.pk}"


class AdviceQuery(models.Model):
    """One sequence of a request and what the benchmark knows of RNAs like it (``evidence``)."""

    request = models.ForeignKey(AdviceRequest, on_delete=models.CASCADE, related_name="queries")
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=80)
    sequence = models.TextField()
    evidence = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["request", "position"], name="advice_query_position_unique")
        ]


class AdviceRun(models.Model):
    """One method run on one query sequence in the sandbox (never a benchmark prediction)."""

    class Role(models.TextChoices):
        TOP = "top", "top of the matching ranking"
        CHOSEN = "chosen", "chosen by the user"

    query = models.ForeignKey(AdviceQuery, on_delete=models.CASCADE, related_name="runs")
    method = models.ForeignKey("predictors.Method", on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey("predictors.MethodVersion", on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=8, choices=Role.choices)
    order = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    result = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["order", "pk"]
        constraints = [models.UniqueConstraint(fields=["query", "method"], name="advice_run_method_unique")]
