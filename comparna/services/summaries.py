"""Pooled per-subset scores of every method, the numbers behind the first ranking page."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Sum

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
        subset=subset, definition=definition, n_targets=subset.targets.count(), methods=methods
    )


def summarize_dataset(*, dataset: Dataset) -> list[SubsetSummary]:
    return [
        summarize_subset(subset=subset, definition=definition)
        for subset in dataset.subsets.all()
        for definition in subset.definitions()
    ]
