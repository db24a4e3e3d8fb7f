"""The registry of CompaRNA's scores: one :class:`Metric` per score, in storage order (SCIENCE.md §2).

Scoring, the pooled scores of rankings and pages, the API and the snapshot archives all read the metrics
from here, so a new score is one entry here (plus its ``Score`` column and migration). The formulas live in
:mod:`comparna.rna.metrics` and :mod:`comparna.rna.wl`; tests parametrised over :data:`METRICS` check the
properties every metric must have (``tests/unit/test_metric_registry.py``), after scikit-learn's
``sklearn/metrics/tests/test_common.py``.

Two kinds of metrics:

- from **counts** (``needs="counts"``): a function of a :class:`~comparna.rna.metrics.PairCounts` (one
  prediction's, or counts pooled over targets, Puton et al. 2013), so it can be pooled over a subset by
  summing counts first; the formula is the counts' property of that name (slipped counts bring their own);
- from **structures** (``needs="structures"``): a function of the reference and predicted structures (the
  WL score, Runge et al. 2023); stored per prediction, never pooled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from comparna.rna.metrics import COUNT_NAMES, PairCounts
from comparna.rna.structure import Structure
from comparna.rna.wl import wl_score

__all__ = [
    "COUNT_FIELDS",
    "METRICS",
    "BY_NAME",
    "METRIC_NAMES",
    "POOLED",
    "STORED_FIELDS",
    "Metric",
    "ScoreAttributes",
    "engine_counts",
    "pooled_scores",
    "scores_of",
]

#: The counts stored for every prediction and pair definition, in storage order (SCIENCE.md §2).
COUNT_FIELDS: tuple[str, ...] = COUNT_NAMES


@dataclass(frozen=True)
class Metric:
    """One score.

    Parameters
    ----------
    name : str
        Its name everywhere: the ``Score`` column, the CSV column, the API field, the ranking report key.
    label : str
        How pages show it.
    function : callable
        ``function(counts: PairCounts)`` for ``needs="counts"``, ``function(reference, prediction)`` for
        ``needs="structures"``.
    needs : {"counts", "structures"}
    higher_is_better : bool
    zero_division : float or None
        The value when the formula's denominator is zero (e.g. no reference and no predicted pair); None when
        the denominator cannot be zero.
    bounds : (float, float)
        Smallest and largest possible value.
    reference : str
        Where the formula comes from.
    """

    name: str
    label: str
    function: Callable[..., float]
    needs: Literal["counts", "structures"]
    higher_is_better: bool
    zero_division: float | None
    bounds: tuple[float, float]
    reference: str

    def of_counts(self, counts: PairCounts) -> float:
        return self.function(counts)

    def of_structures(self, reference: Structure, prediction: Structure) -> float:
        return self.function(reference, prediction)


_PUTON = "Puton et al., NAR 2013 (compatible false positives are neutral)"

METRICS: tuple[Metric, ...] = (
    Metric("mcc", "MCC", attrgetter("mcc"), "counts", True, 0.0, (-1.0, 1.0), f"Matthews 1975; {_PUTON}"),
    Metric("sensitivity", "Sensitivity", attrgetter("sensitivity"), "counts", True, 0.0, (0.0, 1.0), _PUTON),
    Metric("ppv", "PPV", attrgetter("ppv"), "counts", True, 0.0, (0.0, 1.0), _PUTON),
    Metric("f1", "F1", attrgetter("f1"), "counts", True, 0.0, (0.0, 1.0), "harmonic mean of Sens. and PPV"),
    Metric(
        "wl", "WL", wl_score, "structures", True, None, (0.0, 1.0),
        "Weisfeiler-Lehman graph kernel, Runge et al. 2023; Shervashidze et al., JMLR 2011",
    ),
)
BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
#: The metrics that can be pooled over targets (computed from summed counts), in registry order.
POOLED: tuple[Metric, ...] = tuple(m for m in METRICS if m.needs == "counts")
#: Every stored number of a ``Score`` row: the counts, then the metrics.
STORED_FIELDS: tuple[str, ...] = (*COUNT_FIELDS, *METRIC_NAMES)

if len(BY_NAME) != len(METRICS) or set(BY_NAME) & set(COUNT_FIELDS):
    raise ValueError("metric names must be unique and differ from the count names")


def scores_of(counts: PairCounts, reference: Structure, prediction: Structure) -> dict[str, float]:
    """Every metric of one prediction against one reference, in registry order."""
    return {
        m.name: m.of_counts(counts) if m.needs == "counts" else m.of_structures(reference, prediction)
        for m in METRICS
    }


def pooled_scores(counts: PairCounts, *, metrics: Iterable[Metric] = POOLED) -> dict[str, float]:
    """The poolable metrics of (summed) counts, in registry order."""
    return {m.name: m.of_counts(counts) for m in metrics}


def engine_counts(tp: int, fn: int, fp: int, fp_compatible: int, tn: int) -> PairCounts:
    """Counts from the five the ranking engine keeps (``comparna.rna.ranking.COUNT_FIELDS``).

    The split of the non-compatible false positives is not kept there; no metric depends on it, so they are
    all counted as inconsistent.
    """
    return PairCounts(tp, fn, fp, fp - fp_compatible, 0, fp_compatible, tn)


class ScoreAttributes:
    """Mixin for a record with a ``scores`` dict: ``record.<metric name>`` reads ``record.scores[name]``, so
    code and templates name a metric the same way whatever the registry holds."""

    def __getattr__(self, name: str) -> Any:
        scores = self.__dict__.get("scores")
        if scores is not None and name in BY_NAME and name in scores:
            return scores[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
