"""Cluster labels of targets and group-sequential verdicts over ranking snapshots (issue 14).

- :func:`cluster_labels`: the unit the clustered statistics resample and the target-level verdicts flip
  (:mod:`comparna.rna.clustered`) — the family the dataset declares for the target, else its Rfam family
  under its latest assignment (a canonical label or ``Rfam:RF00005``), else its sequence cluster from the
  redundancy step (``seq:<source id>``). The redundancy step keeps one target per cluster of ≥ 90 %
  identity (CD-HIT-EST; RNA STRAND: the kept entry, its removed members in ``provenance.redundant_members``;
  PDB: novelty against the reference set and among the new chains), so a target without a family is the
  representative of its own sequence cluster and its source id is that cluster's id.
- :func:`sequential_for_pair`: the group-sequential verdict of one method pair on a weekly-growing dataset,
  from the paired t statistics stored with every earlier snapshot (each snapshot with more common targets
  is a look) and the current one (:func:`comparna.rna.sequential.sequential_verdict`).
- :func:`pair_history` / :func:`pair_entries`: those statistics read by the database out of the stored
  reports — every pair's (t, n) or one pair's entry per snapshot — never a whole report (issue 28: a report
  at 100 methods is about 10 MB of JSON, and a weekly dataset accumulates hundreds of snapshots).
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterable

import numpy as np
from django.conf import settings
from django.db import connections
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform

from comparna.models import Dataset, RankingSnapshot
from comparna.rna.sequential import sequential_verdict


def cluster_labels(targets: Iterable[tuple[int, str]]) -> dict[int, str]:
    """``{target pk: label}`` for ``(pk, source_id)`` pairs (two queries), the unit of every clustered figure.

    In this order (SCIENCE.md §6, issues 27 and 38): the cluster the dataset declares for the target
    (``Target.provenance["cluster"]``: RNA3DB-2D's component), else the family it declares
    (``Target.family`` with ``family_source == "dataset"``: 42 SRP targets of one dataset are one cluster,
    whether or not cmscan has reached them), else its latest Rfam assignment (labelled as
    :func:`comparna.rna.families.family_of_rfam` labels it, so a declared "tRNA" and an Rfam tRNA are one
    cluster), else the target alone (``seq:<source id>``: its own sequence cluster, see the module
    docstring).
    """
    from comparna.models import Target
    from comparna.rna.families import family_of_rfam
    from ingest.models import FamilyAssignment  # the families live in the ingest app

    targets = list(targets)
    ids = [pk for pk, _ in targets]
    declared: dict[int, str] = {}
    rfam_label: dict[int, str] = {}
    for pk, label, source in Target.objects.filter(pk__in=ids).exclude(family="").values_list(
        "pk", "family", "family_source"
    ):
        (declared if source == "dataset" else rfam_label)[pk] = label
    # a cluster the dataset declares itself (RNA3DB-2D: the RNA3DB component) comes before any family
    for pk, cluster in Target.objects.filter(pk__in=ids, provenance__has_key="cluster").values_list(
        "pk", "provenance__cluster"
    ):
        if isinstance(cluster, str) and cluster:
            declared[pk] = cluster
    latest: dict[int, tuple[str, str]] = {}
    rows = (
        FamilyAssignment.objects.filter(target_id__in=ids)
        .order_by("target_id", "-assigned_at", "-pk")
        .values_list("target_id", "accession", "family_id")
    )
    for target_id, accession, family_id in rows:
        latest.setdefault(target_id, (accession, family_id))
    out = {}
    for pk, source_id in targets:
        if pk in declared:
            out[pk] = declared[pk]
        elif pk in latest:
            accession, family_id = latest[pk]
            out[pk] = family_of_rfam(accession, family_id) if accession else f"seq:{source_id}"
        else:
            out[pk] = rfam_label.get(pk) or f"seq:{source_id}"
    return out


def cluster_summary(labels: Iterable[str]) -> dict:
    """``{"clusters", "families", "unassigned"}`` of per-target labels: every cluster, those that are a
    family (declared or Rfam) and the targets that are their own cluster because nothing is known."""
    labels = list(labels)
    unassigned = sum(1 for x in labels if x.startswith("seq:"))
    distinct = set(labels)
    return {
        "clusters": len(distinct),
        "families": len([x for x in distinct if not x.startswith("seq:")]),
        "unassigned": unassigned,
    }


def is_sequential(dataset: Dataset) -> bool:
    """Datasets monitored week after week (the growing PDB set) get group-sequential verdicts."""
    return dataset.kind == Dataset.Kind.PDB


def _entry_t(entry: dict | None, sign: float) -> tuple[float | None, int]:
    """(sign × t, common targets) of one stored pair entry (``{"n", "paired": {"t", ...}}``), or (None, 0)."""
    if not entry or "paired" not in entry or entry["paired"].get("t") is None:
        return None, int(entry["n"]) if entry else 0
    return sign * float(entry["paired"]["t"]), int(entry["n"])


def _pair_t(report: dict, a: str, b: str) -> tuple[float | None, int]:
    """(t of a − b, common targets) stored in a snapshot report, or (None, 0)."""
    first, second, sign = (a, b, 1.0) if a < b else (b, a, -1.0)
    return _entry_t(report.get("pair_statistics", {}).get("pairs", {}).get(first, {}).get(second), sign)


class PairHistory:
    """The paired t statistic and common targets of every method pair at each of a series of stored reports.

    Two dense arrays, looks × pairs: about 16 bytes a pair and look (100 methods, 300 weekly snapshots:
    24 MB), where the reports themselves would be some 10 MB of JSON each.

    Parameters
    ----------
    pairs : dict
        ``{(first, second): column}``, the pairs as the reports store them (``first`` before ``second``).
    t : numpy.ndarray
        (looks, pairs) float64: t of first − second, NaN where no statistic is stored.
    n : numpy.ndarray
        (looks, pairs) int64: common targets, 0 where the pair is not in the report.
    """

    def __init__(self, pairs: dict[tuple[str, str], int], t: np.ndarray, n: np.ndarray) -> None:
        self.pairs, self.t, self.n = pairs, t, n

    def __len__(self) -> int:
        return self.t.shape[0]

    def series(self, a: str, b: str) -> list[tuple[float | None, int]]:
        """(t of a − b, common targets) at each look, oldest first, as :func:`_pair_t` reads each report."""
        first, second, sign = (a, b, 1.0) if a < b else (b, a, -1.0)
        column = self.pairs.get((first, second))
        if column is None:
            return [(None, 0)] * len(self)
        return [
            (None if math.isnan(t) else sign * t, n)
            for t, n in zip(self.t[:, column].tolist(), self.n[:, column].tolist(), strict=True)
        ]


def pair_history(rows: QuerySet) -> PairHistory:
    """:class:`PairHistory` of the reports of ``rows`` (ranking snapshots or blind rankings), in its order.

    The database flattens ``report -> pair_statistics -> pairs`` into one row per snapshot and pair with only
    ``n`` and ``paired.t`` (PostgreSQL: ``jsonb_each``, each report decompressed once; SQLite: ``json_each``),
    streamed in chunks: no report is loaded whole, the memory is the two arrays.
    """
    pks = list(rows.values_list("pk", flat=True))
    look = {pk: k for k, pk in enumerate(pks)}
    columns: dict[tuple[str, str], int] = {}
    at, column, ts, ns = array("q"), array("q"), array("d"), array("q")
    connection = connections[rows.db]
    quote = connection.ops.quote_name
    meta = rows.model._meta
    table, pk, report = quote(meta.db_table), quote(meta.pk.column), quote(meta.get_field("report").column)
    if connection.vendor == "postgresql":
        # the pairs object made a value once per report (in a subquery kept apart by OFFSET 0)
        sql = (
            "SELECT s.id, p.key, q.key, q.value ->> 'n', q.value -> 'paired' ->> 't' FROM "
            f"(SELECT {pk} AS id, {report} -> 'pair_statistics' -> 'pairs' AS pairs FROM {table} "
            f"WHERE {pk} = ANY(%s) OFFSET 0) s "
            "CROSS JOIN LATERAL jsonb_each(s.pairs) p CROSS JOIN LATERAL jsonb_each(p.value) q"
        )
        params = [pks]
    else:
        # SQLite: ``->`` gives t as its JSON text (a float parsed as the reports' JSON parses it)
        sql = (
            f"SELECT s.{pk}, p.key, q.key, json_extract(q.value, '$.n'), q.value -> '$.paired.t' "
            f"FROM {table} s, json_each(s.{report}, '$.pair_statistics.pairs') p, json_each(p.value) q "
            f"WHERE s.{pk} IN (SELECT value FROM json_each(%s))"
        )
        params = [json.dumps(pks)]
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(4096):
            for row_pk, first, second, n, t in chunk:
                at.append(look[row_pk])
                column.append(columns.setdefault((first, second), len(columns)))
                ns.append(0 if n is None else int(n))
                ts.append(math.nan if t is None or t == "null" else float(t))
    t_dense = np.full((len(pks), len(columns)), np.nan)
    n_dense = np.zeros((len(pks), len(columns)), dtype=np.int64)
    t_dense[at, column] = ts
    n_dense[at, column] = ns
    return PairHistory(columns, t_dense, n_dense)


def pair_entries(rows: QuerySet, a: str, b: str) -> list[dict | None]:
    """The stored statistics of the pair ``a``, ``b`` (``pair_statistics.pairs[first][second]``, None where
    absent) in each report of ``rows``, in its order: the database extracts that path alone."""
    first, second = sorted((a, b))
    path: str | KeyTransform = "report"
    for key in ("pair_statistics", "pairs", first, second):
        path = KeyTransform(key, path)
    return list(rows.values_list(path, flat=True))


def pair_series(entries: Iterable[dict | None], a: str, b: str) -> list[tuple[float | None, int]]:
    """(t of a − b, common targets) of each of :func:`pair_entries`."""
    sign = 1.0 if a < b else -1.0
    return [_entry_t(entry, sign) for entry in entries]


def sequential_for_pair(
    *,
    series: Iterable[tuple[float | None, int]],
    planned: int | None = None,
) -> dict | None:
    """Group-sequential verdict of one pair over the looks so far.

    Parameters
    ----------
    series : iterable of (t, n)
        The pair's paired t statistic (None where not stored) and common targets at each snapshot of the
        subset × definition, oldest first, the current one last (:meth:`PairHistory.series`,
        :func:`pair_series`).
    planned : int, optional
        Planned maximum of common targets (default ``settings.PDB_PLANNED_TARGETS``).

    Returns
    -------
    dict or None
        :meth:`comparna.rna.sequential.SequentialVerdict.as_dict` plus ``planned``; None when no look has
        at least 3 common targets. A look is a snapshot where the pair has more common targets than at the
        previous look; a look stored without a statistic (older snapshots) counts as not crossed.
    """
    planned = settings.PDB_PLANNED_TARGETS if planned is None else planned
    looks: list[tuple[float, int]] = []
    for t, n in series:
        if n < 3 or (looks and n <= looks[-1][1]):
            continue
        looks.append((float("nan") if t is None else t, n))
    if not looks:
        return None
    verdict = sequential_verdict([t for t, _ in looks], [n for _, n in looks], planned=planned)
    return {**verdict.as_dict(), "planned": planned}


def sequential_verdicts(report: dict, *, history: PairHistory, planned: int | None = None) -> dict:
    """``{a: {b: verdict}}`` of every pair of ``report`` (:func:`sequential_for_pair`), the earlier reports'
    statistics in ``history`` (:func:`pair_history`) and this report's as the last look."""
    pairs = report.get("pair_statistics", {}).get("pairs", {})
    return {
        a: {
            b: sequential_for_pair(series=[*history.series(a, b), _pair_t(report, a, b)], planned=planned)
            for b in row
        }
        for a, row in pairs.items()
    }


def history_rows(snapshot: RankingSnapshot) -> QuerySet:
    """The snapshots of the same subset × definition up to and including ``snapshot``, oldest first."""
    return snapshot.subset.rankings.filter(
        definition=snapshot.definition, computed_at__lte=snapshot.computed_at
    ).order_by("computed_at", "pk")
