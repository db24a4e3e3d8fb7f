"""Pooled per-subset scores of every method, the numbers behind the first ranking page."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Sum
from django.utils import timezone

from comparna.models import Dataset, Score, Subset
from comparna.rna.metric_registry import COUNT_FIELDS, ScoreAttributes, pooled_scores
from comparna.rna.metrics import PairCounts


@dataclass(frozen=True)
class MethodSummary(ScoreAttributes):
    """Pooled counts of one method over a subset, and every poolable metric of them (``summary.mcc``, ...)."""

    method: str
    n_targets: int
    counts: PairCounts
    scores: dict[str, float]


@dataclass(frozen=True)
class SubsetSummary:
    subset: Subset
    definition: str
    n_targets: int
    methods: list[MethodSummary]
    computed_at: dt.datetime | None = None


def summarize_subset(*, subset: Subset, definition: str) -> SubsetSummary:
    """Pool the counts of each method's current version over the subset and score them (SCIENCE.md §2)."""
    rows = (
        Score.objects.current()
        .filter(definition=definition, prediction__target__subsets=subset)
        .values("prediction__method_version__method__name")
        .annotate(n=Count("id"), **{f: Sum(f) for f in COUNT_FIELDS})
    )
    methods = []
    for row in rows:
        counts = PairCounts(**{f: int(row[f]) for f in COUNT_FIELDS})
        methods.append(
            MethodSummary(
                method=row["prediction__method_version__method__name"],
                n_targets=row["n"],
                counts=counts,
                scores=pooled_scores(counts),
            )
        )
    methods.sort(key=lambda m: (-m.mcc, m.method))
    return SubsetSummary(
        subset=subset, definition=definition, n_targets=subset.targets.count(), methods=methods,
        computed_at=timezone.now(),
    )


def summarize_dataset(*, dataset: Dataset) -> list[SubsetSummary]:
    return [
        summarize_subset(subset=subset, definition=definition)
        for subset in dataset.subsets.all()
        for definition in subset.definitions()
    ]


def unranked_summary_key(subset: Subset, definition: str) -> str:
    return f"unranked-summary:{subset.pk}:{definition}"


def unranked_summary(*, subset: Subset, definition: str) -> SubsetSummary | None:
    """The pooled scores the dataset rankings page shows for a subset without a ranking snapshot yet, as
    :func:`refresh_unranked_summaries` last computed them; None before (the page says they are being
    computed: pooling a large subset's scores takes seconds)."""
    from comparna.services.pages.common import cache_get

    return cache_get(unranked_summary_key(subset, definition))


def refresh_unranked_summaries() -> int:
    """Pool the scores of every subset × definition that has no ranking snapshot yet (background work, with
    the families refresh); returns how many."""
    from comparna.services.pages.common import cache_set

    done = 0
    for subset in Subset.objects.select_related("dataset"):
        for definition in subset.definitions():
            if subset.rankings.filter(definition=definition).exists():
                continue
            cache_set(unranked_summary_key(subset, definition),
                      summarize_subset(subset=subset, definition=definition), None)
            done += 1
    return done


#: The columns of a report's row that the list of ranking snapshots gives (the whole rows: the snapshot's own
#: endpoint), in this order.
SNAPSHOT_SUMMARY_KEYS = ("method", "rank", "ranked", "rank_low", "rank_high", "decided_mcc",
                         "decided_targets", "mcc", "targets")


def snapshot_summary_fields(protocol: str | None, clusters: int | None, rows: list[dict] | None) -> dict:
    """``{"protocol", "clusters", "methods"}`` of a snapshot from its report's values: the protocol ("2013"
    for a report stored before issue 27), and each row's :data:`SNAPSHOT_SUMMARY_KEYS` it has."""
    return {
        "protocol": protocol or "2013",
        "clusters": clusters,
        "methods": [{k: r[k] for k in SNAPSHOT_SUMMARY_KEYS if k in r} for r in rows or []],
    }


def store_snapshot_summaries() -> int:
    """Store the summary (:class:`comparna.models.RankingSnapshotSummary`) of every ranking snapshot that has
    none yet (background work: it reads each new snapshot's report once); returns how many were stored."""
    from django.db.models import Exists, OuterRef
    from django.db.models.fields.json import KeyTransform

    from comparna.models import RankingSnapshot, RankingSnapshotSummary

    missing = RankingSnapshot.objects.filter(
        ~Exists(RankingSnapshotSummary.objects.filter(snapshot=OuterRef("pk")))
    ).order_by("pk")
    done = 0
    # one report at a time (the database extracts the three values), no statement open across the writes
    for pk in list(missing.values_list("pk", flat=True)):
        found = (
            RankingSnapshot.objects.filter(pk=pk)
            .values_list(KeyTransform("protocol", "report"), KeyTransform("clusters", "report"),
                         KeyTransform("methods", "report"))
            .first()
        )
        if found is None:  # deleted meanwhile
            continue
        RankingSnapshotSummary.objects.bulk_create(
            [RankingSnapshotSummary(snapshot_id=pk, **snapshot_summary_fields(*found))], ignore_conflicts=True
        )
        done += 1
    return done
