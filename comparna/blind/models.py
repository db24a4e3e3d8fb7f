"""Blind weeks, their targets, frozen predictions, blind scores and blind rankings.

A week is named by the PDB release (a Wednesday) it predicts. Times on these rows (``opens_at``, ``deadline``,
``frozen_at``, ...) are read from :mod:`comparna.clock`, the clock every deadline is judged by; Django's
``created_at`` stamps stay real time.
"""

from __future__ import annotations

from django.db import models

from comparna.models import RunRecord


class BlindWeek(models.Model):
    """One week of the blind track: the pre-release file it read, its commitment, its state."""

    class Status(models.TextChoices):
        WAITING = "waiting", "waiting for the pre-release file"
        OPEN = "open", "predicting (before the deadline)"
        MISSED = "missed", "no usable pre-release file before the deadline"
        COMMITTED = "committed", "predictions committed, awaiting release"
        RELEASED = "released", "released: linking chains and scoring"
        DONE = "done", "every target scored or closed"

    release_date = models.DateField(unique=True, help_text="The Wednesday of the PDB release predicted.")
    opens_at = models.DateTimeField(help_text="Saturday 03:00 UTC: the pre-release files appear.")
    deadline = models.DateTimeField(help_text="Predictions frozen later than this are late; commitment time.")
    release_at = models.DateTimeField(help_text="Wednesday 00:00 UTC: the coordinates are released.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.WAITING)
    imported_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(
        null=True, blank=True, help_text="After a failed attempt: no new attempt before (backoff)."
    )
    files = models.JSONField(
        default=dict, blank=True, help_text="Per file read: url, sha256, Last-Modified, bytes."
    )
    summary = models.JSONField(
        default=dict, blank=True, help_text="Polymers read, kept, and every one not kept with its reason."
    )
    commitment = models.TextField(blank=True, help_text="The published commitment file (TSV).")
    commitment_sha256 = models.CharField(max_length=64, blank=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-release_date"]

    def __str__(self) -> str:
        return f"blind week {self.release_date} [{self.status}]"

    @property
    def committed(self) -> bool:
        return bool(self.commitment_sha256)

    @property
    def blind(self) -> bool:
        """Its commitment was published before the release (else no prediction of it counts as blind)."""
        return self.committed_at is not None and self.committed_at <= self.release_at


class PrereleaseRun(RunRecord):
    """One attempt at reading a week's pre-release files, with its outcome (retries are new rows)."""

    class Outcome(models.TextChoices):
        IMPORTED = "imported"
        STALE = "stale", "file not updated yet (last week's)"
        UNAVAILABLE = "unavailable", "file could not be fetched"
        MALFORMED = "malformed", "malformed or partial file"
        MISSED = "missed", "deadline passed without a usable file"

    week = models.ForeignKey(BlindWeek, on_delete=models.CASCADE, related_name="runs")
    attempt = models.PositiveIntegerField(default=1)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    url = models.CharField(max_length=500, blank=True)

    class Meta(RunRecord.Meta):
        pass

    def __str__(self) -> str:
        return f"pre-release poll {self.week.release_date} #{self.attempt} [{self.outcome or self.status}]"


class BlindTarget(models.Model):
    """A polymer announced for release, predicted blind; linked to its released chain afterwards."""

    class State(models.TextChoices):
        OPEN = "open", "awaiting release"
        HELD = "held", "not released yet (held by the PDB)"
        SCORED = "scored", "linked and scored"
        CLOSED = "closed", "closed"

    week = models.ForeignKey(BlindWeek, on_delete=models.CASCADE, related_name="targets")
    target = models.OneToOneField("comparna.Target", on_delete=models.CASCADE, related_name="blind")
    pdb_id = models.CharField(max_length=12)
    entity_id = models.CharField(max_length=8)
    announced = models.TextField(help_text="The sequence as the pre-release file wrote it (with (CODE)s).")
    state = models.CharField(max_length=8, choices=State.choices, default=State.OPEN, db_index=True)
    reason = models.TextField(blank=True, help_text="Why closed (or held).")
    chains = models.JSONField(
        default=list, blank=True,
        help_text="Every released chain considered: chain, entity, identity, coverage, exclusion, used.",
    )
    chain_id = models.CharField(max_length=8, blank=True, help_text="The chain scored against.")
    identity = models.FloatField(null=True, blank=True)
    reference = models.JSONField(
        default=dict, blank=True,
        help_text="Per pair definition, the released chain's pairs in the target's numbering [[i, j], ...].",
    )
    window = models.JSONField(
        default=list, blank=True,
        help_text="Target positions with an observed residue, [[first, last], ...]: what is scored.",
    )
    linked_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True, help_text="Last release check (clock time).")

    class Meta:
        ordering = ["week", "pdb_id", "entity_id"]
        constraints = [
            models.UniqueConstraint(fields=["week", "pdb_id", "entity_id"], name="blindtarget_unique_polymer")
        ]

    def __str__(self) -> str:
        return f"{self.pdb_id} entity {self.entity_id} ({self.week.release_date})"


class FrozenPrediction(models.Model):
    """The SHA-256 of one prediction's content on a blind target, taken when it reached its outcome.

    ``content`` is exactly what was hashed (canonical JSON of it); a prediction counts as blind only if its
    hash is in the week's commitment (``committed``); one frozen later is ``late``.
    """

    blind_target = models.ForeignKey(BlindTarget, on_delete=models.CASCADE, related_name="frozen")
    prediction = models.OneToOneField(
        "predictors.Prediction", null=True, on_delete=models.SET_NULL, related_name="frozen"
    )
    method_name = models.CharField(max_length=100)
    method_version = models.CharField(max_length=100)
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(max_length=24)
    nonce = models.CharField(max_length=32)
    sha256 = models.CharField(max_length=64)
    content = models.JSONField()
    finished_at = models.DateTimeField(help_text="When the outcome was stored (clock time).")
    frozen_at = models.DateTimeField(help_text="When the hash was taken (clock time).")
    committed = models.BooleanField(default=False)
    late = models.BooleanField(default=False)

    class Meta:
        ordering = ["blind_target", "method_name"]

    def __str__(self) -> str:
        return f"{self.method_name} on {self.blind_target} {self.sha256[:12]}"


class BlindScore(models.Model):
    """Counts and metrics of one committed prediction against its target's released chain (observed part)."""

    frozen = models.ForeignKey(FrozenPrediction, on_delete=models.CASCADE, related_name="scores")
    definition = models.CharField(max_length=16)
    values = models.JSONField(help_text="The registry's counts and metrics (comparna.rna.metric_registry).")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["frozen", "definition"], name="blindscore_unique_definition")
        ]


class BlindRanking(models.Model):
    """A ranking of committed predictions: one week (``scope`` = the release date) or all weeks
    (``scope`` = "cumulative", with group-sequential verdicts over its earlier looks)."""

    scope = models.CharField(max_length=16)
    definition = models.CharField(max_length=16)
    computed_at = models.DateTimeField(auto_now_add=True)
    inputs_hash = models.CharField(max_length=64)
    inputs = models.JSONField()
    report = models.JSONField()

    class Meta:
        ordering = ["-computed_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["scope", "definition", "inputs_hash"], name="blindranking_unique_inputs"
            )
        ]
