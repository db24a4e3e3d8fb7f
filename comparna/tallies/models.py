"""Tallies: what the pages show of the predictions table, counted in the background (issue 28).

A page must not do work that grows with all predictions. The periodic task
:func:`comparna.tallies.tasks.refresh_tallies_task` counts the predictions once per
``COMPARNA_TALLY_INTERVAL_S`` into these few thousand rows; the pages read them.
"""

from __future__ import annotations

from django.db import models


class TallyRun(models.Model):
    """One refresh: when it counted and the throughput window it used (the newest row is the current one)."""

    computed_at = models.DateTimeField(db_index=True)
    window_minutes = models.FloatField()
    seconds = models.FloatField(default=0.0, help_text="How long the refresh took.")
    targets = models.JSONField(
        default=dict, blank=True, help_text='Targets counted: {"datasets": {pk: n}, "subsets": {pk: n}}.'
    )
    throughput = models.FloatField(
        null=True, blank=True,
        help_text="Seconds of public predictions run per minute of the window (the ETA divisor).",
    )

    class Meta:
        ordering = ["-computed_at"]


class PredictionTally(models.Model):
    """Predictions of one method version in one state on one dataset (``subset`` empty) or one subset,
    split by ``self_reported``; ``recent`` of them finished (and ran) within the run's window before its
    ``computed_at``, the first of those started at ``first_started``; ``blind`` of them uploaded blind (the
    method page's origins)."""

    run = models.ForeignKey(TallyRun, on_delete=models.CASCADE, related_name="tallies")
    dataset = models.ForeignKey("comparna.Dataset", on_delete=models.CASCADE, related_name="+")
    subset = models.ForeignKey("comparna.Subset", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="+")
    method_version = models.ForeignKey("predictors.MethodVersion", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=24)
    self_reported = models.BooleanField(default=False)
    n = models.PositiveIntegerField()
    recent = models.PositiveIntegerField(default=0)
    first_started = models.DateTimeField(null=True, blank=True)
    blind = models.PositiveIntegerField(
        default=0, db_default=0,
        help_text="Of them, uploaded by the method's owner, not answered by its service (blind).",
    )

    class Meta:
        indexes = [
            # every filter the pages use: one dataset's rows, one subset's rows (of the current run)
            models.Index(fields=["run", "dataset", "subset"], name="tally_scope"),
            models.Index(fields=["run", "subset"], name="tally_subset"),
        ]


class ScheduledEta(models.Model):
    """When the workers reach the last public prediction queued in a scope (:mod:`comparna.services.backlog`):
    the site, a dataset or a subset (``method_version`` empty), or one method version's queue in a dataset or
    subset; ``minutes`` None without a measured throughput; ``unmeasured``: version pks whose queued work
    before it has no measured cost yet (the ETA is then a lower bound)."""

    run = models.ForeignKey(TallyRun, on_delete=models.CASCADE, related_name="etas")
    scope = models.CharField(max_length=8)
    dataset = models.ForeignKey("comparna.Dataset", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    subset = models.ForeignKey("comparna.Subset", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="+")
    method_version = models.ForeignKey("predictors.MethodVersion", null=True, blank=True,
                                       on_delete=models.CASCADE, related_name="+")
    minutes = models.FloatField(null=True, blank=True)
    unmeasured = models.JSONField(default=list, blank=True)

    class Meta:
        indexes = [models.Index(fields=["run", "scope", "dataset", "subset"], name="eta_scope")]


class RankingFreshness(models.Model):
    """Whether a ranking snapshot's inputs are still the current ones (recomputing it would give the same
    ranking), checked in the background; ``digest`` is what the check saw of the subset's tallies."""

    snapshot = models.OneToOneField("comparna.RankingSnapshot", on_delete=models.CASCADE, related_name="+")
    inputs_current = models.BooleanField()
    digest = models.CharField(max_length=64)
    checked_at = models.DateTimeField()


class FamilySummary(models.Model):
    """The families page's numbers of one dataset and definition (each method's mean MCC with its CI per
    family), computed in the background from the current scores; ``stamp`` is the newest score it saw."""

    dataset = models.ForeignKey("comparna.Dataset", on_delete=models.CASCADE, related_name="+")
    definition = models.CharField(max_length=16)
    stamp = models.CharField(max_length=64)
    data = models.JSONField()
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "definition"], name="familysummary_unique")
        ]


class RankingRows(models.Model):
    """A ranking snapshot's table rows as its page shows them (under one protocol): computed in the
    background when the snapshot is new (they read the subset's scores and bootstrap a CI per method)."""

    snapshot = models.ForeignKey("comparna.RankingSnapshot", on_delete=models.CASCADE, related_name="+")
    protocol = models.CharField(max_length=16)
    rows = models.JSONField()
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "protocol"], name="rankingrows_unique")
        ]


class MethodStanding(models.Model):
    """One method's row in one ranking snapshot (the page's protocol view, and its rank in the stored
    report), so a method's page reads its own rows instead of every snapshot's whole report."""

    snapshot = models.ForeignKey("comparna.RankingSnapshot", on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=100)
    protocol = models.CharField(max_length=16)
    ranked = models.BooleanField()
    of = models.PositiveIntegerField(help_text="How many methods the view ranks.")
    report_rank = models.IntegerField(null=True, blank=True)
    row = models.JSONField(help_text="The method's row of the snapshot's view (rank, interval, MCC, n).")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "method"], name="methodstanding_unique")
        ]
        indexes = [models.Index(fields=["method", "snapshot"], name="methodstanding_method")]


class MethodSummary(models.Model):
    """A method page's figures computed from its scores (mean MCC with CIs by dataset, length and family; the
    precision-recall curve), computed in the background; ``stamp`` identifies the scores they were computed
    from, so only a method whose scores changed is recomputed."""

    method = models.OneToOneField("predictors.Method", on_delete=models.CASCADE, related_name="+")
    stamp = models.CharField(max_length=64)
    data = models.JSONField()
    computed_at = models.DateTimeField()
    seconds = models.FloatField(default=0.0, help_text="How long the computation took.")


class RankingStatus(models.Model):
    """What the pages show of the newest snapshot of a ranking beside its table, stored in the background at
    every tallies refresh so that no page reads a report or counts for it: its size (from the report and
    inputs, immutable) and its live state from the tallies counted at ``tally_at`` — unfinished predictions,
    whether its inputs are the current ones, the progress with its ETA, and the active methods it does not
    rank with the reason (:mod:`comparna.services.pages.ranking_status`)."""

    snapshot = models.OneToOneField("comparna.RankingSnapshot", on_delete=models.CASCADE, related_name="+")
    n_methods = models.PositiveIntegerField(help_text="Methods in the report (ranked or not).")
    n_targets = models.PositiveIntegerField(help_text="Targets of the subset when it was ranked.")
    common_targets_ranked = models.PositiveIntegerField(null=True, blank=True)
    dataset_version = models.PositiveIntegerField(null=True, blank=True)
    pending = models.PositiveIntegerField(help_text="Unfinished predictions of active methods on the subset.")
    inputs_current = models.BooleanField(
        null=True, blank=True, help_text="Checked only without unfinished predictions (None otherwise)."
    )
    progress = models.JSONField(help_text="The subset's prediction progress (progress.prediction_progress).")
    not_ranked = models.JSONField(help_text="The active methods the snapshot does not rank, with the reason.")
    tally_at = models.DateTimeField(help_text="When the tallies it was computed from were counted.")
    computed_at = models.DateTimeField()
