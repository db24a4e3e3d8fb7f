"""The ranking snapshots' serialised forms for the API: the whole report (immutable, cached under the
snapshot's pk), the state that can still change (settled or provisional), and the list's summaries."""

from __future__ import annotations

from django.core.cache import cache
from django.db.models.fields.json import KeyTransform
from rest_framework.fields import DateTimeField

from comparna.api import serializers as s
from comparna.models import RankingSnapshot

CACHE_PREFIX = "comparna:api:v1"


def pair_extras(report: dict, a: str, b: str) -> dict:
    """Equivalence and group-sequential verdict of a − b stored with the snapshot (null when absent)."""
    first, second, sign = (a, b, 1.0) if a < b else (b, a, -1.0)
    stats = report.get("pair_statistics", {})
    eq = stats.get("pairs", {}).get(first, {}).get(second, {}).get("equivalence")
    seq = report.get("sequential", {}).get(first, {}).get(second)
    difference = None
    if eq is not None:
        low, high = sign * eq["low"], sign * eq["high"]
        difference = {"estimate": sign * eq["estimate"], "low": min(low, high), "high": max(low, high),
                      "delta": stats.get("delta")}
    return {
        "equivalence": eq["verdict"] if eq else None,
        "mcc_difference": difference,
        "sequential_verdict": seq["verdict"] if seq else None,
    }


def _immutable_data(snapshot: RankingSnapshot) -> dict:
    """The serialised snapshot, cached for ever under its pk (snapshots are immutable)."""
    key = f"{CACHE_PREFIX}:snapshot:{snapshot.pk}"
    data = cache.get(key)
    if data is None:
        data = s.RankingSnapshotSerializer(snapshot).data
        cache.set(key, data, None)
    return data


def snapshot_state(pk: int, snapshot: RankingSnapshot | None = None) -> dict:
    """Whether the snapshot is settled, with the definition's link — what changes while a snapshot stays the
    same, so it is added to the immutable data on every answer (the ranking page's 30-second cache)."""
    from comparna.services.pages.common import cache_get
    from comparna.services.pages.ranking_status import ranking_live
    from comparna.services.pages.rankings import state_fields

    live = cache_get(f"ranking-live:{pk}")
    if live is None:
        if snapshot is None:
            snapshot = RankingSnapshot.objects.select_related("dataset", "subset").get(pk=pk)
        live = ranking_live(snapshot)
    return state_fields(live["state"])


def snapshot_data(snapshot: RankingSnapshot) -> dict:
    """The serialised snapshot plus its current settled / provisional state."""
    return {**_immutable_data(snapshot), **snapshot_state(snapshot.pk, snapshot)}


def snapshot_summaries(snapshots: list[RankingSnapshot]) -> list[dict]:
    """The list's entries of ``snapshots`` (fetched with :func:`with_summary_fields`): each method's main
    columns and the state, not the whole report; the immutable part cached for ever under the pk."""
    from django.urls import reverse

    from comparna.services.pages.common import cache_get
    from comparna.services.pages.rankings import state_fields
    from comparna.services.progress import ranking_state

    out = []
    for snap in snapshots:
        key = f"{CACHE_PREFIX}:summary:{snap.pk}"
        data = cache.get(key)
        if data is None:
            data = {
                "id": snap.pk,
                "url": reverse("api-ranking-detail", args=[snap.pk]),
                "dataset": snap.dataset.slug,
                "subset": snap.subset.slug,
                "definition": snap.definition,
                "computed_at": DateTimeField().to_representation(snap.computed_at),
                "seed": snap.seed,
                "inputs_hash": snap.inputs_hash,
                "protocol": snap.summary_protocol or "2013",
                "clusters": snap.summary_clusters,
                "methods": [
                    {k: r[k] for k in s.SUMMARY_ROW_KEYS if k in r} for r in snap.summary_methods or []
                ],
            }
            cache.set(key, data, None)
        live = cache_get(f"ranking-live:{snap.pk}")  # the ranking page's, when cached; else the state only
        out.append({**data, **state_fields(live["state"] if live else ranking_state(snap))})
    return out


def with_summary_fields(qs):
    """``qs`` without the reports and inputs, with the report's protocol, clusters and rows (the database
    extracts them)."""
    return qs.defer("report", "inputs").annotate(
        summary_protocol=KeyTransform("protocol", "report"),
        summary_clusters=KeyTransform("clusters", "report"),
        summary_methods=KeyTransform("methods", "report"),
    )


def snapshot_data_by_pk(pk: int) -> dict:
    data = cache.get(f"{CACHE_PREFIX}:snapshot:{pk}")
    if data is None:
        return snapshot_data(RankingSnapshot.objects.select_related("dataset", "subset").get(pk=pk))
    return {**data, **snapshot_state(pk)}
