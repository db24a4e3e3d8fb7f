"""Registered methods, their versions, and predictions with their recorded outcome."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

# The one filter of what counts publicly, defined beside Score (comparna must not import predictors: ingest
# reaches comparna.models, and ingest and predictors stay independent).
from comparna.models import (  # noqa: F401 - re-exported
    public_prediction_q,
    public_version_q,
    visible_prediction_q,
)


class MethodQuerySet(models.QuerySet):
    def public(self) -> MethodQuerySet:
        """Methods anyone may see: everything but owners' development methods."""
        return self.filter(visibility=Method.Visibility.PUBLIC)

    def visible_to(self, user) -> MethodQuerySet:
        """Public methods and, for a signed-in owner, their own development methods."""
        return self.filter(visible_q(user))


def visible_q(user, prefix: str = "") -> models.Q:
    """The filter "public, or owned by ``user``" on a Method (``prefix`` reaches it from a related model,
    e.g. ``"prediction__method_version__method__"``)."""
    q = models.Q(**{f"{prefix}visibility": Method.Visibility.PUBLIC})
    if user is not None and getattr(user, "is_authenticated", False):
        q |= models.Q(**{f"{prefix}owner": user})
    return q


def visible_version_q(user, prefix: str = "") -> models.Q:
    """The filter "public (:func:`public_version_q`), or of ``user``'s method" on a MethodVersion."""
    q = public_version_q(prefix)
    if user is not None and getattr(user, "is_authenticated", False):
        q |= models.Q(**{f"{prefix}method__owner": user})
    return q


class Method(models.Model):
    """A prediction method as people know it (e.g. "RNAfold (MFE)"); its runnable form is a MethodVersion.

    A method registered by its owner (issue 17) starts as a *development* method: it is run and scored on
    every target like any other, but only its owner sees it (pages, API with their token); it enters public
    pages, rankings and snapshots once staff approve its publication.
    """

    class Visibility(models.TextChoices):
        PUBLIC = "public", "Public"
        DEVELOPMENT = "development", "Development (private to its owner)"

    class InputKind(models.TextChoices):
        SINGLE = "single", "Single sequence"
        COLLECTION = "collection", "Sequence collection"
        ALIGNMENT = "alignment", "Alignment"

    #: Unique among public methods, among ownerless (catalogue, staff-registered) methods and among one
    #: owner's methods (the constraints below), not across owners' development methods: a name another owner
    #: keeps private does not block it, so a refusal never tells that a private method exists (issue 36).
    name = models.CharField(max_length=100, db_index=True)
    description = models.TextField(blank=True)
    citation = models.TextField(blank=True)
    url = models.URLField(blank=True)
    input_kind = models.CharField(max_length=16, choices=InputKind.choices, default=InputKind.SINGLE)
    pseudoknots = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    from_catalogue = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="methods",
        help_text="The account that registered it (none for catalogue methods).",
    )
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.PUBLIC, db_index=True
    )
    publication_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="When the owner asked for it to be made public (staff approve)."
    )
    published_at = models.DateTimeField(null=True, blank=True)

    objects = MethodQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(visibility="public"), name="method_public_name_unique"
            ),
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(owner__isnull=True), name="method_ownerless_name_unique"
            ),
            models.UniqueConstraint(fields=["owner", "name"], name="method_owner_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_public(self) -> bool:
        return self.visibility == self.Visibility.PUBLIC

    @property
    def kind(self) -> str:
        """command, image or web (of the current version's spec)."""
        current = self.current_version
        return (current.spec.get("kind") or "command") if current is not None else "command"

    @property
    def is_comparative(self) -> bool:
        return self.input_kind != self.InputKind.SINGLE

    @property
    def current_version(self) -> MethodVersion | None:
        """The version the public sees and the rankings use."""
        return self.versions.filter(is_current=True).first()

    @property
    def pending_version(self) -> MethodVersion | None:
        """A new version its owner saved of this public method, awaiting staff approval (issue 26)."""
        return self.versions.filter(pending_review=True).first()

    @property
    def working_version(self) -> MethodVersion | None:
        """The version its owner last saved: the pending one while staff have not approved it, else the
        current one (what the owner's pages and API show)."""
        return self.pending_version or self.current_version


class MethodVersionQuerySet(models.QuerySet):
    def to_run(self) -> MethodVersionQuerySet:
        """Versions run on new targets: every active method's current version and any version awaiting
        approval (so that its owner sees it on every target before staff decide)."""
        return self.filter(models.Q(is_current=True) | models.Q(pending_review=True), method__active=True)

    def public(self) -> MethodVersionQuerySet:
        """Versions whose results may be public: approved by staff, of a public method
        (:func:`public_version_q`, the one rule)."""
        return self.filter(public_version_q())

    def visible_to(self, user) -> MethodVersionQuerySet:
        """Public versions and, for a signed-in owner, every version of their own methods."""
        return self.filter(visible_version_q(user))


class MethodVersion(models.Model):
    """An exact runnable specification of a method; editing command or version makes a new row."""

    method = models.ForeignKey(Method, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=100)
    program = models.CharField(max_length=200)
    spec = models.JSONField(help_text="The full PredictorSpec as JSON.")
    fingerprint = models.CharField(max_length=64)
    is_current = models.BooleanField(default=True)
    runnable = models.BooleanField(
        default=True,
        help_text="False for a version imported from a snapshot: its spec is never run (not queued, not "
        "executed) until the method is registered again through the admin, with a test run.",
    )
    pending_review = models.BooleanField(
        default=False,
        help_text="A version its owner saved of a public method, changing what runs: run and shown to its "
        "owner, never public or ranked until staff approve it (it then becomes current).",
    )
    approved_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When staff approved it (catalogue and staff-registered versions: when registered; an "
        "owner's: 'Make public'). Without it, nothing of the version is ever public (issue 36).",
    )
    proposed_training_data = models.JSONField(
        null=True,
        blank=True,
        help_text="Training data its owner declared for this public method's version and staff have not "
        "approved yet (a list like spec['training_data']); the approved declaration stays in the spec and "
        "is what the unseen ranking uses until staff approve (issue 36).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MethodVersionQuerySet.as_manager()

    class Meta:
        ordering = ["method", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["method", "fingerprint"], name="methodversion_unique_fingerprint"
            ),
            models.UniqueConstraint(
                fields=["method"], condition=models.Q(is_current=True), name="methodversion_one_current"
            ),
            models.UniqueConstraint(
                fields=["method"], condition=models.Q(pending_review=True), name="methodversion_one_pending"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.method.name} {self.version}"


class PredictionQuerySet(models.QuerySet):
    def finished(self) -> PredictionQuerySet:
        return self.exclude(
            status__in=[Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING]
        )

    def ok(self) -> PredictionQuerySet:
        return self.filter(status=Prediction.Status.OK)

    def public(self) -> PredictionQuerySet:
        """Predictions that count publicly: of public methods, not self-reported
        (:func:`public_prediction_q`)."""
        return self.filter(public_prediction_q())

    def visible_to(self, user) -> PredictionQuerySet:
        """Public predictions and, for a signed-in owner, every prediction of their own methods."""
        return self.filter(visible_prediction_q(user))


class Prediction(models.Model):
    """One method version run on one target, ending in exactly one recorded state."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        OK = "ok"
        FAILED = "failed"
        TIMEOUT = "timeout"
        TOO_LONG = "too_long", "too long"
        UNPARSABLE = "unparsable"
        INFRASTRUCTURE_ERROR = "infrastructure_error", "infrastructure error"
        # A web service accepted the job; its structure arrives by upload (or the window closes: timeout).
        AWAITING = "awaiting", "awaiting upload"

    method_version = models.ForeignKey(MethodVersion, on_delete=models.CASCADE, related_name="predictions")
    target = models.ForeignKey("comparna.Target", on_delete=models.CASCADE, related_name="predictions")
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED, db_index=True)
    pairs = models.TextField(blank=True, help_text="Canonical pair text of the predicted structure.")
    probabilities = models.JSONField(
        null=True, blank=True, help_text="Sparse [[i, j, p], ...] above a cut-off."
    )
    runtime_s = models.FloatField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Parser message or failure reason.")
    stderr_tail = models.TextField(blank=True)
    runner = models.CharField(max_length=64, blank=True)
    limits = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(
        max_length=80, blank=True, help_text="The process running it (workspace.process_token)."
    )
    queued_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    awaiting_until = models.DateTimeField(
        null=True, blank=True, help_text="An awaiting prediction's upload window closes then."
    )
    uploaded = models.BooleanField(default=False, help_text="The structure came by upload (web services).")
    self_reported = models.BooleanField(
        default=False,
        help_text="Uploaded by its method's owner for a target whose reference was public (not blind): "
        "stored and shown to the owner, never in public rankings, comparisons, scores or snapshots.",
    )
    schedule_rank = models.BigIntegerField(
        default=0, help_text="Order in which queued predictions are sent to workers (predictors.scheduling)."
    )
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When its task was last sent; empty: waiting in the stored queue."
    )

    objects = PredictionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["method_version", "target"], name="prediction_unique_run")
        ]
        indexes = [
            # the dispatcher's query: queued, not yet sent, in schedule order
            models.Index(fields=["status", "dispatched_at", "schedule_rank"], name="prediction_dispatch"),
            models.Index(fields=["target", "schedule_rank"], name="prediction_target_rank"),
        ]

    def __str__(self) -> str:
        return f"{self.method_version} on {self.target} [{self.status}]"


class TrialRun(models.Model):
    """A test run of a predictor spec requested in the admin, executed by a worker (queue ``testrun``).

    The admin page polls it; only a successful trial of exactly the spec being saved allows saving.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    spec = models.JSONField(help_text="The PredictorSpec tested, as JSON.")
    sequence = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    result = models.JSONField(null=True, blank=True, help_text="Outcome shown on the admin page.")
    worker = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "test run"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"test run {self.id} [{self.status}]"


class TrainingDeclaration(models.Model):
    """What a method version was trained or parameterised on, as edited by staff (issue 15).

    Without a row, a version's declaration is the one its catalogue spec gives (``spec["training_data"]``,
    :mod:`predictors.training_data`); staff add a row in the admin to correct or complete it. The
    leakage-aware ranking reads the declaration through :func:`predictors.training_data.declaration_of`.
    """

    version = models.OneToOneField(
        MethodVersion, on_delete=models.CASCADE, related_name="training_declaration"
    )
    declared = models.BooleanField(
        default=True, help_text="Untick when the authors state nothing: the method is then 'training data "
        "undeclared' and left out of the unseen rankings."
    )
    sources = models.TextField(
        blank=True, help_text="The training sets and parameter sources, one per line, as the paper names "
        "them."
    )
    families = models.JSONField(
        default=list, blank=True, help_text='Canonical families seen in training (comparna.rna.families), or '
        '["*"] when the sets hold RNAs of any family.'
    )
    datasets = models.JSONField(
        default=list, blank=True, help_text="CompaRNA datasets (slugs) contained in the training data: every "
        "sequence read from them counts as seen."
    )
    unavailable = models.JSONField(
        default=list, blank=True, help_text="Named training sets not available locally (not screened by "
        "identity)."
    )
    cutoff = models.DateField(null=True, blank=True, help_text="Latest date of the training data, if stated.")
    complete = models.BooleanField(default=True, help_text="False when the paper's statement is partial.")
    citation = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"training data of {self.version}"
