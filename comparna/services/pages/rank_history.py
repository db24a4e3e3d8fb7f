"""A subset ranking page's rank history: each method's rank in the newest snapshots of a subset × definition.

A PDB subset gets a new snapshot every week (520 in ten years), so the page cannot read every snapshot, nor
any snapshot's report (about 10 MB at 100 methods) in a request (issue 28). It shows the newest
:data:`HISTORY_SNAPSHOTS` snapshots and reads their ranks from the methods' stored standings
(:class:`comparna.tallies.models.MethodStanding`, one small row per method and snapshot, stored for every
snapshot — old ones too — by :func:`comparna.services.pages.methods.store_method_standings` in the tallies
refresh); only a snapshot stored since the last refresh is read from its report's rows.
"""

from __future__ import annotations

from django.db.models.fields.json import KeyTransform

from comparna.models import RankingSnapshot, Subset
from comparna.services.pages.common import cached
from comparna.services.pages.figures import rank_history_figure
from comparna.services.ranking_scope import is_ranked
from comparna.tallies.models import MethodStanding

#: The most snapshots a rank history shows (the newest): a year of weekly PDB snapshots. Reading and
#: drawing every snapshot would make the page's cost grow with the years.
HISTORY_SNAPSHOTS = 52


def snapshot_history(
    *, subset: Subset | int, definition: str, limit: int = HISTORY_SNAPSHOTS
) -> list[dict]:
    """The newest ``limit`` snapshots of a subset × definition, oldest first:
    ``{"pk", "at", "ranks": {method: rank}}`` with the report's rank of each ranked method.

    Two small queries whatever the number of snapshots: their standings (``limit`` × methods short rows), and
    the report's rows of a snapshot that has no standings yet (stored since the last background run)."""
    snaps = list(
        RankingSnapshot.objects.filter(subset=subset, definition=definition)
        .order_by("-computed_at", "-pk")
        .values_list("pk", "computed_at")[:limit]
    )[::-1]
    ranks: dict[int, dict[str, int]] = {pk: {} for pk, _ in snaps}
    stored = set()
    for pk, method, rank, ranked in MethodStanding.objects.filter(snapshot__in=list(ranks)).values_list(
        "snapshot_id", "method", "report_rank", "ranked"
    ):
        stored.add(pk)
        if ranked:
            ranks[pk][method] = rank
    if missing := [pk for pk in ranks if pk not in stored]:
        for pk, rows in RankingSnapshot.objects.filter(pk__in=missing).values_list(
            "pk", KeyTransform("methods", "report")  # the rows, not whole reports
        ):
            ranks[pk] = {r["method"]: r["rank"] for r in rows or [] if is_ranked(r)}
    return [{"pk": pk, "at": at, "ranks": ranks[pk]} for pk, at in snaps]


def subset_history(snapshot: RankingSnapshot) -> dict:
    """The rank history of the snapshot's subset × definition up to its newest snapshot:
    ``{"figure": Plotly JSON or None, "shown": snapshots drawn, "more": whether older ones exist}``, cached
    per newest snapshot (what it shows changes only with a new snapshot)."""
    newest = list(
        RankingSnapshot.objects.filter(subset=snapshot.subset_id, definition=snapshot.definition)
        .order_by("-computed_at", "-pk")
        .values_list("pk", flat=True)[: HISTORY_SNAPSHOTS + 1]
    )

    def compute() -> dict:
        history = snapshot_history(subset=snapshot.subset_id, definition=snapshot.definition)
        return {"figure": rank_history_figure(history), "shown": len(history),
                "more": len(newest) > HISTORY_SNAPSHOTS}

    return cached(f"rank-history:{snapshot.subset_id}:{snapshot.definition}:{newest[0] if newest else None}",
                  compute)
