"""A comparison's group-sequential look on a weekly-growing dataset (SCIENCE.md §6): the pair's verdict
over the subset's snapshots and how it reads beside the unadjusted one (moved from
:mod:`comparna.services.pages.comparison`, which imports both)."""

from __future__ import annotations

from comparna.models import RankingSnapshot
from comparna.rna.sequential import DIFFERENT, NO_DIFFERENCE
from comparna.services.uncertainty import (
    history_rows,
    is_sequential,
    pair_entries,
    pair_series,
    sequential_for_pair,
)


def sequential_paired_verdict(sequential: str, unadjusted: str) -> str:
    """The comparison verdict on a sequentially monitored dataset.

    "different" only when the group-sequential boundary has been crossed; an unadjusted "different" without
    a crossing reads "not yet (boundary not crossed)"; when the planned maximum was reached without a
    crossing, "no difference shown" unless the power makes it "equivalent"; otherwise Xu et al.'s
    "equivalent" / "inconclusive".
    """
    if sequential == DIFFERENT:
        return "different"
    if sequential == NO_DIFFERENCE:
        return "equivalent" if unadjusted == "equivalent" else "no difference shown"
    return "not yet (boundary not crossed)" if unadjusted == "different" else unadjusted


def sequential_look(
    *, snapshot: RankingSnapshot, a: str, b: str, current: tuple[float, int] | None = None
) -> dict | None:
    """Group-sequential verdict of ``a`` against ``b`` on a weekly-growing dataset (SCIENCE.md §6).

    The looks are this snapshot and the earlier ones of the subset × definition at which the pair had more
    common targets than before; each carries its paired t statistic (:mod:`comparna.services.uncertainty`).
    ``current`` (t, n) stands for this look when the snapshot predates stored statistics. None for static
    datasets (one look, no correction needed).
    """
    if not is_sequential(snapshot.dataset):
        return None
    entries = pair_entries(history_rows(snapshot), a, b)  # the pair's stored statistics, not the reports
    stored = entries[-1] if entries else None
    series = pair_series(entries, a, b)
    if current is not None and (not stored or "paired" not in stored):
        series.append(current)
    return sequential_for_pair(series=series)
