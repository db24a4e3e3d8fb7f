"""The scores a ranking snapshot was computed from, for the pages that name it.

A snapshot that stores its scored target sets (:mod:`comparna.services.ranking_scope`) gives, per method,
the scores of the method version it ranked (by fingerprint) on the targets that version had scored when the
snapshot was computed. Older snapshots give None: their pages use the current scores and say "live".
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from comparna.models import RankingSnapshot, Score
from comparna.services.pages.common import TargetScore, report_values, target_scores
from comparna.services.ranking_scope import marked


def snapshot_scores(
    snapshot: RankingSnapshot, methods: Iterable[str], *, common_only: bool = False
) -> list[TargetScore] | None:
    """The snapshot's scores of ``methods`` (None: the snapshot predates stored target sets).

    ``common_only``: only on the targets every one of ``methods`` had scored in the snapshot (a pair's
    comparison). The report's parts are read (its target ids and the methods' bitmaps), never the whole
    report; with no common target there is no query for scores at all, and a few common targets are asked
    for by id, not by reading each method's every score.
    """
    names = list(methods)
    sources, *bitmaps = report_values(
        snapshot, ("target_sources",), *[("scored", name) for name in names]
    )
    if sources is None:
        return None
    fingerprints = snapshot.inputs.get("methods", {})
    kept = {
        name: _scored(sources, bits)
        for name, bits in zip(names, bitmaps, strict=True)
        if name in fingerprints
    }
    if common_only:
        common = set.intersection(*kept.values()) if kept and len(kept) == len(set(names)) else set()
        if not common:
            return []
        kept = dict.fromkeys(kept, common)
    wanted = Q(pk__in=[])
    for name in kept:
        wanted |= Q(
            prediction__method_version__method__name=name,
            prediction__method_version__fingerprint=fingerprints[name],
        )
    qs = Score.objects.public().filter(
        wanted, definition=snapshot.definition, prediction__target__subsets=snapshot.subset
    )
    if common_only and len(common) <= BY_ID_LIMIT:
        qs = qs.filter(prediction__target__source_id__in=sorted(common))
    return [s for s in target_scores(qs) if s.source_id in kept[s.method]]


def scored_counts(snapshot: RankingSnapshot, methods: Iterable[str]) -> dict[str, int]:
    """How many targets each of ``methods`` had scored in the snapshot (its bitmap in the report; 0 for a
    method the snapshot does not rank), without reading scores."""
    names = list(methods)
    sources, *bitmaps = report_values(snapshot, ("target_sources",), *[("scored", n) for n in names])
    fingerprints = snapshot.inputs.get("methods", {})
    return {
        name: len(_scored(sources or [], bits)) if name in fingerprints else 0
        for name, bits in zip(names, bitmaps, strict=True)
    }


#: Up to this many common targets, a comparison's scores are asked for by target id.
BY_ID_LIMIT = 1000


def _scored(sources: list[str], bits: str | None) -> set[str]:
    """The target ids a method's bitmap in the report marks as scored (none without a bitmap)."""
    return set() if bits is None else marked(sources, bits)
