"""Targets, their reference structures, datasets and subsets, and the per-prediction counts."""

from __future__ import annotations

from django.db import models


class Dataset(models.Model):
    """A benchmark data set: the weekly-growing PDB set or the static RNA STRAND set."""

    class Kind(models.TextChoices):
        PDB = "pdb", "PDB (continuous, blind)"
        STATIC = "static", "Static benchmark"

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    description = models.TextField(blank=True)
    definitions = models.JSONField(default=list, help_text="Pair definitions this dataset is scored on.")
    version = models.PositiveIntegerField(
        default=0, help_text="Bumped whenever targets are added or removed."
    )
    provenance = models.JSONField(
        default=dict,
        blank=True,
        help_text="Declared source of a static dataset: declaration name, file, sha256, reader, citation, "
        "licence and filters (ingest.datasets).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def ensure(cls, slug: str, *, subsets=(), **defaults) -> Dataset:
        """The dataset row ``slug`` (created with ``defaults`` when missing; an existing row is kept) and
        its ``subsets``, each a mapping of Subset fields with ``slug``, ordered as given (missing ones
        created)."""
        dataset, _ = cls.objects.get_or_create(slug=slug, defaults=defaults)
        for order, spec in enumerate(subsets):
            spec = dict(spec)
            Subset.objects.get_or_create(
                dataset=dataset, slug=spec.pop("slug"), defaults={**spec, "order": order}
            )
        return dataset


class Subset(models.Model):
    """A named subset of a dataset (all, length bins, pseudoknotted, ...)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="subsets")
    slug = models.SlugField()
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)
    definition = models.CharField(
        max_length=16, blank=True, help_text="Rank only under this pair definition (blank: every definition)."
    )
    targets = models.ManyToManyField("Target", related_name="subsets", blank=True)

    def definitions(self) -> list[str]:
        return [d for d in self.dataset.definitions if not self.definition or d == self.definition]

    class Meta:
        ordering = ["dataset", "order", "slug"]
        constraints = [models.UniqueConstraint(fields=["dataset", "slug"], name="subset_unique_slug")]

    def __str__(self) -> str:
        return f"{self.dataset.slug}/{self.slug}"


class TargetQuerySet(models.QuerySet):
    def in_subset(self, subset: Subset) -> TargetQuerySet:
        return self.filter(subsets=subset)

    def in_family(self, family: str) -> TargetQuerySet:
        """Targets whose family label is ``family`` (``""``: targets without one); see ``Target.family``."""
        return self.filter(family=family)


class Target(models.Model):
    """One RNA chain to predict: a sequence with its provenance."""

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="targets")
    source_id = models.CharField(
        max_length=200, help_text="Entry id in the source, e.g. ASE_00001, 1EHZ_A or an ArchiveII name."
    )
    sequence = models.TextField()
    length = models.PositiveIntegerField()
    source_database = models.CharField(max_length=100, blank=True)
    rna_class = models.CharField(max_length=200, blank=True)
    family = models.CharField(
        max_length=100,
        blank=True,
        db_index=True,
        help_text="The target's family (comparna.rna.families): its dataset's own class mapped to a "
        "canonical family, else its latest Rfam assignment (canonical, or 'Rfam:<accession>'); empty "
        "when neither.",
    )
    family_source = models.CharField(
        max_length=8,
        blank=True,
        choices=[("dataset", "dataset class"), ("rfam", "Rfam assignment")],
        help_text="Where the family label comes from.",
    )
    organism = models.CharField(max_length=300, blank=True)
    pdb_id = models.CharField(max_length=8, blank=True)
    chain_id = models.CharField(max_length=8, blank=True)
    release_date = models.DateField(null=True, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TargetQuerySet.as_manager()

    class Meta:
        ordering = ["dataset", "source_id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "source_id"], name="target_unique_source")]

    def __str__(self) -> str:
        return self.source_id


class DatasetEntry(models.Model):
    """Every entry read from a static dataset's source, kept or not.

    Kept entries are the targets; the others say why they are not (and, when redundant, which target
    stands for them). Their sequences are what a method trained on the dataset has seen, so the
    leakage-aware ranking compares targets against all of them, not only against the kept ones.
    """

    class Outcome(models.TextChoices):
        KEPT = "kept"
        REDUNDANT = "redundant"
        TOO_SHORT = "too_short", "too short"
        NON_ACGU = "non_acgu", "non-ACGU symbols"
        MULTI_MOLECULE = "multi_molecule", "several molecules"
        PDB_RULES = "pdb_rules", "excluded by the PDB rules"
        NO_PAIRS = "no_pairs", "no base pair"
        MALFORMED = "malformed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="entries")
    source_id = models.CharField(max_length=200)
    sequence = models.TextField(blank=True, help_text="Upper-case, T -> U; empty when unreadable.")
    family = models.CharField(max_length=100, blank=True, help_text="Canonical family of the source's class.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    detail = models.TextField(blank=True)
    representative = models.CharField(max_length=200, blank=True)
    target = models.OneToOneField(
        Target, on_delete=models.SET_NULL, null=True, blank=True, related_name="dataset_entry"
    )

    class Meta:
        ordering = ["dataset", "source_id"]
        verbose_name_plural = "dataset entries"
        constraints = [
            models.UniqueConstraint(fields=["dataset", "source_id"], name="datasetentry_unique_source")
        ]

    def __str__(self) -> str:
        return f"{self.dataset.slug}/{self.source_id} [{self.outcome}]"


class PairDefinition(models.TextChoices):
    STANDARD = "standard", "Standard (cWW A-U, G-C, G-U)"
    EXTENDED = "extended", "Extended (all base-base pairs)"


class ReferenceStructure(models.Model):
    """The reference base pairs of a target under one pair definition, in canonical text form."""

    target = models.ForeignKey(Target, on_delete=models.CASCADE, related_name="references")
    definition = models.CharField(max_length=16, choices=PairDefinition.choices)
    pairs = models.TextField(blank=True, help_text="Canonical pair text 'i-j i-j ...', 1-based.")
    n_pairs = models.PositiveIntegerField()
    pseudoknotted = models.BooleanField()
    has_multiplets = models.BooleanField()
    classes = models.JSONField(
        null=True,
        blank=True,
        help_text="Leontis-Westhof class of each pair, [[i, j, 'cWW'], ...], when annotated.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["target", "definition"], name="reference_unique_definition")
        ]

    def __str__(self) -> str:
        return f"{self.target} ({self.definition})"


def public_version_q(prefix: str = "") -> models.Q:
    """The filter "its results may be public" on a MethodVersion (``prefix`` reaches it from a related model,
    e.g. ``"method_version__"`` from a Prediction): a version staff approved (catalogue, staff-registered,
    or an owner's version approved by "Make public": ``approved_at`` set, issue 36) of a public method.

    A version its owner saved and staff have not approved (a development method's, one awaiting review, one
    withdrawn or replaced before approval) never is, whether current or old; nor is a version while it awaits
    review (an older approved one its owner proposed again).
    """
    return models.Q(
        **{
            f"{prefix}method__visibility": "public",
            f"{prefix}approved_at__isnull": False,
            f"{prefix}pending_review": False,
        }
    )


def public_prediction_q(prefix: str = "") -> models.Q:
    """The filter "counts publicly" on a Prediction (``prefix`` reaches it from a related model, e.g.
    ``"prediction__"`` from a Score): a prediction of an approved version of a public method
    (:func:`public_version_q`) that is not self-reported (issues 26, 36).

    Every public ranking, comparison, score list, page, drawing, download, feed and snapshot goes through
    this one filter (through ``predictors.models.PredictionQuerySet.public`` or :meth:`ScoreQuerySet.public`),
    so an upload of a target's public reference or a version staff never approved can never reach them.
    """
    return public_version_q(f"{prefix}method_version__") & models.Q(**{f"{prefix}self_reported": False})


def visible_prediction_q(user, prefix: str = "") -> models.Q:
    """The filter "counts publicly, or belongs to ``user``'s method" on a Prediction: an owner sees their
    development and self-reported predictions (marked as such), nobody else does."""
    q = public_prediction_q(prefix)
    if user is not None and getattr(user, "is_authenticated", False):
        q |= models.Q(**{f"{prefix}method_version__method__owner": user})
    return q


class ScoreQuerySet(models.QuerySet):
    def public(self) -> ScoreQuerySet:
        """Scores that count publicly: of approved versions of public methods, not self-reported
        (:func:`public_prediction_q`, the one filter every public use goes through)."""
        return self.filter(public_prediction_q("prediction__"))

    def visible_to(self, user) -> ScoreQuerySet:
        """Public scores and, for a signed-in owner, every score of their own methods (the owners' API)."""
        return self.filter(visible_prediction_q(user, "prediction__"))

    def current(self, *, active_only: bool = True, public_only: bool = True) -> ScoreQuerySet:
        """Scores of each method's current version, of active methods only unless ``active_only`` is False,
        counting publicly only (no owner's development method, no self-reported upload: :meth:`public`)
        unless ``public_only`` is False: what rankings, pages and snapshots use."""
        qs = self.filter(prediction__method_version__is_current=True)
        if public_only:
            qs = qs.public()
        return qs.filter(prediction__method_version__method__active=True) if active_only else qs


class Score(models.Model):
    """Counts of one prediction against one reference definition, and every metric of the registry
    (:data:`comparna.rna.metric_registry.METRICS`, one column each, in its order)."""

    prediction = models.ForeignKey("predictors.Prediction", on_delete=models.CASCADE, related_name="scores")
    definition = models.CharField(max_length=16, choices=PairDefinition.choices)
    tp = models.PositiveIntegerField()
    fn = models.PositiveIntegerField()
    fp = models.PositiveIntegerField()
    fp_inconsistent = models.PositiveIntegerField()
    fp_contradicting = models.PositiveIntegerField()
    fp_compatible = models.PositiveIntegerField()
    tn = models.PositiveBigIntegerField()
    mcc = models.FloatField()
    sensitivity = models.FloatField()
    ppv = models.FloatField()
    f1 = models.FloatField()
    wl = models.FloatField()

    objects = ScoreQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["prediction", "definition"], name="score_unique_definition")
        ]


class RunRecord(models.Model):
    """What every long-running data job records for its users: state, progress (done of total), times, error.

    Shared by the runs of every source (:class:`ImportRun` here, ``ingest.PollRun``); ``ingest.services.runs``
    drives one through its states.
    """

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True
        ordering = ["-started_at"]

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


class ImportRun(RunRecord):
    """One run of a data import (e.g. RNA STRAND), with its progress and outcome shown to users."""

    kind = models.CharField(max_length=32)
    source = models.CharField(max_length=500)
    summary = models.JSONField(default=dict, blank=True)

    class Meta(RunRecord.Meta):
        pass


class RankingRecord(models.Model):
    """What every stored ranking keeps: when, the seed, its inputs and their identity, the report.

    Shared by :class:`RankingSnapshot` and :class:`UnseenRanking`; ``inputs_hash`` identifies identical
    inputs so that a job stores a new row only when something changed.
    """

    computed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    seed = models.BigIntegerField()
    inputs_hash = models.CharField(max_length=64)
    inputs = models.JSONField()
    report = models.JSONField()

    class Meta:
        abstract = True
        ordering = ["-computed_at", "-pk"]


class RankingSnapshot(RankingRecord):
    """An immutable, dated ranking of one subset under one pair definition, with its inputs' identity.

    ``inputs`` records everything needed to recompute it (dataset version, method versions, seed, engine
    conventions); ``inputs_hash`` identifies identical inputs so the nightly job stores a new snapshot only
    when something changed.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="rankings")
    subset = models.ForeignKey(Subset, on_delete=models.CASCADE, related_name="rankings")
    definition = models.CharField(max_length=16, choices=PairDefinition.choices)

    class Meta(RankingRecord.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["subset", "definition", "inputs_hash"], name="ranking_unique_inputs"
            )
        ]

    def __str__(self) -> str:
        return f"{self.subset} {self.definition} @ {self.computed_at:%Y-%m-%d %H:%M}"


class RankingSnapshotSummary(models.Model):
    """What the list of ranking snapshots (``/api/rankings/``) gives of one snapshot: its protocol, number of
    clusters and each method's main columns, stored once in the background
    (:func:`comparna.services.summaries.store_snapshot_summaries`) so that the list never reads the whole
    reports (about 10 MB each at 100 methods)."""

    snapshot = models.OneToOneField(
        RankingSnapshot, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    protocol = models.CharField(max_length=16, help_text='The report\'s protocol, "2013" when it has none.')
    clusters = models.IntegerField(null=True, blank=True)
    methods = models.JSONField(help_text="The report's rows, the columns of SNAPSHOT_SUMMARY_KEYS only.")


class UnseenRanking(RankingRecord):
    """The leakage-aware ranking of a dataset under one pair definition (comparna.services.leakage).

    Every pairwise comparison uses only the targets neither method could have seen in training (declared
    families and sequence identity to the declared training sets available locally). Immutable, like
    :class:`RankingSnapshot`; a new row only when its inputs changed.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="unseen_rankings")
    definition = models.CharField(max_length=16, choices=PairDefinition.choices)

    class Meta(RankingRecord.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "definition", "inputs_hash"], name="unseen_unique_inputs"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dataset.slug} unseen {self.definition} @ {self.computed_at:%Y-%m-%d %H:%M}"


class IdentityScreen(models.Model):
    """Which targets of a dataset are at or above the leakage identity to some entry of a training dataset.

    Computed once per (dataset version, training dataset version, threshold) with ``cd-hit-est-2d`` against
    every entry read from the training dataset's source (kept or not: a method trained on it saw them all).
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="identity_screens")
    against = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64, help_text="sha256 of both sides' sequences and the thresholds.")
    parameters = models.JSONField(default=dict)
    similar = models.JSONField(default=dict, help_text="Target source id -> matching training entry id.")
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "against", "key"], name="screen_unique_key")
        ]
