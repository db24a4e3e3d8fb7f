"""The scores a ranking snapshot was computed from, for the pages that name it.

A snapshot that stores its scored target sets (:mod:`comparna.services.ranking_scope`) gives, per method,
the scores of the method version it ranked (by fingerprint) on the targets that version had scored when the
snapshot was computed. Older snapshots give None: their pages use the current scores and say "live".
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from comparna.models import RankingSnapshot, Score
from comparna.services.pages.common import TargetScore, target_scores
from comparna.services.ranking_scope import scored_targets


def snapshot_scores(snapshot: RankingSnapshot, methods: Iterable[str]) -> list[TargetScore] | None:
    """The snapshot's scores of ``methods`` (None: the snapshot predates stored target sets)."""
    report = snapshot.report
    if report.get("target_sources") is None:
        return None
    fingerprints = snapshot.inputs.get("methods", {})
    names = [name for name in methods if name in fingerprints]
    wanted = Q(pk__in=[])
    for name in names:
        wanted |= Q(
            prediction__method_version__method__name=name,
            prediction__method_version__fingerprint=fingerprints[name],
        )
    qs = Score.objects.public().filter(
        wanted, definition=snapshot.definition, prediction__target__subsets=snapshot.subset
    )
    kept = {name: scored_targets(report, name) or set() for name in names}
    return [s for s in target_scores(qs) if s.source_id in kept[s.method]]
