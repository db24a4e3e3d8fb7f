"""Dataset snapshots: numbered, dated, immutable archives of a dataset with its predictions and counts.

The model belongs to the ``comparna`` app (``app_label``), so its table (``comparna_datasetsnapshot``) and
migrations stay where they have always been; the ``comparna.snapshots`` app only gathers its code.
"""

from __future__ import annotations

from django.db import models


class DatasetSnapshot(models.Model):
    """One numbered archive of a dataset; once ``done`` its file and checksum never change."""

    class Status(models.TextChoices):
        PENDING = "pending"
        BUILDING = "building"
        DONE = "done"
        FAILED = "failed"

    dataset = models.ForeignKey("comparna.Dataset", on_delete=models.PROTECT, related_name="snapshots")
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    done = models.PositiveIntegerField(default=0, help_text="Progress: items written so far.")
    total = models.PositiveIntegerField(default=0)
    stage = models.CharField(max_length=100, blank=True, help_text="What the builder is writing now.")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last progress report of the builder; a stale one may be taken over."
    )
    dataset_version = models.PositiveIntegerField(default=0)
    state_hash = models.CharField(
        max_length=64, blank=True, help_text="Identity of the dataset's rows when the build started."
    )
    include_predictions = models.BooleanField(default=True)
    path = models.CharField(max_length=500, blank=True, help_text="Archive file, relative to SNAPSHOT_DIR.")
    size = models.PositiveBigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    contents = models.JSONField(default=dict, blank=True, help_text="Summary: counts of rows and files.")
    error = models.TextField(blank=True)

    class Meta:
        app_label = "comparna"
        ordering = ["dataset", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "number"], name="datasetsnapshot_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.dataset.slug} snapshot {self.number}"

    @property
    def is_done(self) -> bool:
        """Built: its archive exists and never changes (the only state that can be downloaded)."""
        return self.status == self.Status.DONE
