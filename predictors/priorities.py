"""Dataset priorities in the prediction queue (issue 38): which datasets' first predictions come first.

A dataset's priority is declared with it (``Dataset.provenance["schedule_priority"]``, written by the
import of a PDB-derived set; missing: 0, as RNA STRAND, ArchiveII and the weekly PDB set).
:func:`tiered_schedule_ranks` applies :func:`predictors.scheduling.assign_tiered_ranks` to one queueing and
moves the queued, not yet sent jobs of priority-0 datasets back where the small sets run alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import F, Max, Min

from comparna.models import Dataset
from predictors.models import Prediction
from predictors.scheduling import Candidate, MethodCost, assign_ranks, assign_tiered_ranks

__all__ = ["dataset_priorities", "tiered_schedule_ranks"]


def dataset_priorities() -> dict[int, int]:
    """``{dataset pk: priority}`` of every dataset that declares a priority above 0."""
    out = {}
    for pk, provenance in Dataset.objects.values_list("pk", "provenance"):
        value = (provenance or {}).get("schedule_priority") if isinstance(provenance, dict) else None
        if isinstance(value, int) and value > 0:
            out[pk] = value
    return out


def tiered_schedule_ranks(
    candidates: Sequence[Candidate], methods: Sequence[MethodCost], *, existing: dict[int, int],
    next_rank: int,
) -> dict[int, int]:
    """The schedule rank of every candidate (``Candidate.group`` is the dataset pk), with the datasets'
    priorities; without any, exactly :func:`predictors.scheduling.assign_ranks`. Call inside the queueing
    (the backlog it moves is read and written here)."""
    priorities = dataset_priorities()
    if not any(c.group in priorities for c in candidates):
        return assign_ranks(candidates, methods, existing=existing, next_rank=next_rank)
    primary = Prediction.objects.filter(schedule_rank__gte=0).exclude(target__dataset_id__in=list(priorities))
    first = primary.aggregate(first=Min("schedule_rank"))["first"]
    # the small sets queued before (a separate import): a larger set starts after their last rank
    small = [pk for pk, level in priorities.items() if level == 1]
    until = Prediction.objects.filter(
        target__dataset_id__in=small, status=Prediction.Status.QUEUED, schedule_rank__gte=0
    ).aggregate(last=Max("schedule_rank"))["last"]
    plan = assign_tiered_ranks(
        candidates, methods, existing=existing, next_rank=next_rank, priorities=priorities,
        first_primary_rank=first, small_sets_until=until,
    )
    if plan.shift_by and plan.shift_from is not None:
        primary.filter(
            status=Prediction.Status.QUEUED, dispatched_at__isnull=True, schedule_rank__gte=plan.shift_from
        ).update(schedule_rank=F("schedule_rank") + plan.shift_by)
    return plan.ranks
