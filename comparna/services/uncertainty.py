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
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from comparna.models import Dataset, RankingSnapshot
from comparna.rna.sequential import sequential_verdict


def cluster_labels(targets: Iterable[tuple[int, str]]) -> dict[int, str]:
    """``{target pk: label}`` for ``(pk, source_id)`` pairs (two queries), the unit of every clustered figure.

    In this order (SCIENCE.md §6, issue 27): the family the dataset declares for the target
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


def _pair_t(report: dict, a: str, b: str) -> tuple[float | None, int]:
    """(t of a − b, common targets) stored in a snapshot report, or (None, 0)."""
    first, second, sign = (a, b, 1.0) if a < b else (b, a, -1.0)
    entry = report.get("pair_statistics", {}).get("pairs", {}).get(first, {}).get(second)
    if not entry or "paired" not in entry or entry["paired"].get("t") is None:
        return None, int(entry["n"]) if entry else 0
    return sign * float(entry["paired"]["t"]), int(entry["n"])


def sequential_for_pair(
    *,
    history: Iterable[dict],
    a: str,
    b: str,
    current: tuple[float | None, int] | None = None,
    planned: int | None = None,
) -> dict | None:
    """Group-sequential verdict of ``a`` against ``b`` over the looks so far.

    Parameters
    ----------
    history : iterable of dict
        Reports of the earlier snapshots of the subset × definition, oldest first.
    current : (t, n), optional
        The current look's statistic when it is not the last report of ``history``.
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
    series = [_pair_t(report, a, b) for report in history]
    if current is not None:
        series.append(current)
    for t, n in series:
        if n < 3 or (looks and n <= looks[-1][1]):
            continue
        looks.append((float("nan") if t is None else t, n))
    if not looks:
        return None
    verdict = sequential_verdict([t for t, _ in looks], [n for _, n in looks], planned=planned)
    return {**verdict.as_dict(), "planned": planned}


def snapshot_history(snapshot: RankingSnapshot) -> list[dict]:
    """Reports of the snapshots of the same subset × definition up to and including ``snapshot``."""
    rows = snapshot.subset.rankings.filter(
        definition=snapshot.definition, computed_at__lte=snapshot.computed_at
    ).order_by("computed_at", "pk")
    return list(rows.values_list("report", flat=True))
