"""Pooled per-subset scores of every method, the numbers behind the first ranking page."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Sum

from comparna.models import SCORE_COUNT_FIELDS as COUNT_FIELDS
from comparna.models import Dataset, Score, Subset
from comparna.rna.metrics import PairCounts, score_counts


@dataclass(frozen=True)
class MethodSummary:
    method: str
    n_targets: int
    counts: PairCounts
    mcc: float
    sensitivity: float
    ppv: float
    f1: float


@dataclass(frozen=True)
class SubsetSummary:
    subset: Subset
    definition: str
    n_targets: int
    methods: list[MethodSummary]


def summarize_subset(*, subset: Subset, definition: str) -> SubsetSummary:
    """Pool the counts of each method's current version over the subset and score them (SCIENCE.md §2)."""
    rows = (
        Score.objects.filter(
            definition=definition,
            prediction__target__subsets=subset,
            prediction__method_version__is_current=True,
            prediction__method_version__method__active=True,
        )
        .values("prediction__method_version__method__name")
        .annotate(n=Count("id"), **{f: Sum(f) for f in COUNT_FIELDS})
    )
    methods = []
    for row in rows:
        counts = PairCounts(**{f: int(row[f]) for f in COUNT_FIELDS})
        s = score_counts(counts)
        methods.append(
            MethodSummary(
                method=row["prediction__method_version__method__name"],
                n_targets=row["n"],
                counts=counts,
                mcc=s["mcc"],
                sensitivity=s["sensitivity"],
                ppv=s["ppv"],
                f1=s["f1"],
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
