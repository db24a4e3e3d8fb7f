"""The ranking snapshots' serialised forms for the API: the whole report (immutable, cached under the
snapshot's pk), the state that can still change (settled or provisional), and the list's summaries."""

from __future__ import annotations

from django.core.cache import cache
from django.db.models.fields.json import KeyTransform
from rest_framework.fields import DateTimeField

from comparna.api import serializers as s
from comparna.models import RankingSnapshot

# v2: the rows carry the numbers under the downloads' names (issue 37)
CACHE_PREFIX = "comparna:api:v2"


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
    # the target-level verdict's reason and effect sizes (issue 35; absent from older snapshots: null)
    interval = report.get("mean_interval", {}).get(a, {}).get(b)
    shift = report.get("hodges_lehmann", {}).get(a, {}).get(b)
    more = report.get("to_decide", {}).get(a, {}).get(b)
    return {
        "equivalence": eq["verdict"] if eq else None,
        "mcc_difference": difference,
        "sequential_verdict": seq["verdict"] if seq else None,
        "reason": report.get("verdict_reasons", {}).get(a, {}).get(b) or None,
        "mean_difference": report.get("mean_difference", {}).get(a, {}).get(b),
        "mean_interval": {"low": interval[0], "high": interval[1]} if interval else None,
        "hodges_lehmann": {"estimate": shift[0], "low": shift[1], "high": shift[2]} if shift else None,
        "to_decide": {"targets": more[0], "families": more[1]} if more else None,
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
    same, so it is added to the immutable data on every answer
    (:func:`comparna.services.pages.ranking_status.snapshot_states`)."""
    from comparna.services.pages.ranking_status import snapshot_states
    from comparna.services.pages.rankings import state_fields

    if snapshot is None:
        snapshot = (
            RankingSnapshot.objects.select_related("dataset", "subset").defer("report", "inputs").get(pk=pk)
        )
    return state_fields(snapshot_states([snapshot])[pk])


def snapshot_data(snapshot: RankingSnapshot) -> dict:
    """The serialised snapshot plus its current settled / provisional state."""
    return {**_immutable_data(snapshot), **snapshot_state(snapshot.pk, snapshot)}


def snapshot_summaries(snapshots: list[RankingSnapshot]) -> list[dict]:
    """The list's entries of ``snapshots`` (fetched without their reports): each method's main columns from
    the stored summaries (:class:`comparna.models.RankingSnapshotSummary`, read from the report only for a
    snapshot stored since the last background run) and the state
    (:func:`comparna.services.pages.ranking_status.snapshot_states`)."""
    from django.urls import reverse

    from comparna.models import RankingSnapshotSummary
    from comparna.services.pages.export_fields import api_row
    from comparna.services.pages.ranking_status import snapshot_states
    from comparna.services.pages.rankings import state_fields
    from comparna.services.summaries import snapshot_summary_fields

    pks = [snap.pk for snap in snapshots]
    stored = {
        pk: {"protocol": protocol, "clusters": clusters, "methods": methods}
        for pk, protocol, clusters, methods in RankingSnapshotSummary.objects.filter(snapshot__in=pks)
        .values_list("snapshot_id", "protocol", "clusters", "methods")
    }
    if missing := [pk for pk in pks if pk not in stored]:  # the database extracts the three values
        for pk, *values in RankingSnapshot.objects.filter(pk__in=missing).values_list(
            "pk", KeyTransform("protocol", "report"), KeyTransform("clusters", "report"),
            KeyTransform("methods", "report"),
        ):
            stored[pk] = snapshot_summary_fields(*values)
    states = snapshot_states(snapshots)
    out = []
    for snap in snapshots:
        summary = stored[snap.pk]
        out.append({
            "id": snap.pk,
            "url": reverse("api-ranking-detail", args=[snap.pk]),
            "dataset": snap.dataset.slug,
            "subset": snap.subset.slug,
            "definition": snap.definition,
            "computed_at": DateTimeField().to_representation(snap.computed_at),
            "seed": snap.seed,
            "inputs_hash": snap.inputs_hash,
            "protocol": summary["protocol"],
            "clusters": summary["clusters"],
            "methods": [api_row(m) for m in summary["methods"] or []],
            **state_fields(states[snap.pk]),
        })
    return out


def snapshot_data_by_pk(pk: int) -> dict:
    data = cache.get(f"{CACHE_PREFIX}:snapshot:{pk}")
    if data is None:
        return snapshot_data(RankingSnapshot.objects.select_related("dataset", "subset").get(pk=pk))
    return {**data, **snapshot_state(pk)}
