"""Rankings from stored counts: build the engine's input for a subset and store immutable snapshots."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction

from comparna.models import Dataset, RankingSnapshot, Score, Subset
from comparna.rna import metrics, thresholds
from comparna.rna.metric_registry import POOLED, engine_counts, pooled_scores
from comparna.rna.pair_statistics import pairwise_statistics
from comparna.rna.ranking import COUNT_FIELDS, CountsTable, ranking_report, robustness_ranking
from comparna.rna.statistics import bootstrap_ci_mean
from comparna.services import ranking_scope
from comparna.services.uncertainty import cluster_labels, is_sequential, sequential_for_pair

log = logging.getLogger(__name__)

#: Version of the primary verdict stored in every snapshot's inputs (and so in its inputs hash).
VERDICT_PROTOCOL = "target-level-1"


def build_counts_table(*, subset: Subset, definition: str) -> tuple[CountsTable, dict]:
    """The counts of the current version of every active method on every target of ``subset``.

    Every target of the subset is a column, predicted or not (the robustness ranking picks the targets where
    every method has a finished outcome, :mod:`comparna.services.ranking_scope`).
    Returns the table and the inputs' identity (what a recomputation needs).
    """
    table, identity, _, _ = subset_inputs(subset=subset, definition=definition)
    return table, identity


def subset_inputs(*, subset: Subset, definition: str) -> tuple[CountsTable, dict, list[int], np.ndarray]:
    """:func:`build_counts_table` plus the target ids in table order and the finished-failure mask."""
    targets = list(subset.targets.order_by("source_id").values_list("pk", "source_id", "length"))
    target_ix = {pk: n for n, (pk, _, _) in enumerate(targets)}
    ref_pairs = dict(
        subset.targets.filter(references__definition=definition).values_list("pk", "references__n_pairs")
    )
    rows = (
        Score.objects.current()
        .filter(definition=definition, prediction__target__subsets=subset)
        .values_list(
            "prediction__method_version__method__name",
            "prediction__method_version__fingerprint",
            "prediction__target_id",
            *COUNT_FIELDS,
        )
        .order_by("prediction__method_version__method__name", "prediction__target_id")
    )
    methods: dict[str, int] = {}
    fingerprints: dict[str, str] = {}
    keys, values = [], []
    for name, fingerprint, target_id, *numbers in rows:
        keys.append((methods.setdefault(name, len(methods)), target_ix[target_id]))
        fingerprints[name] = fingerprint
        values.append(numbers)
    counts = np.zeros((len(methods), len(targets), len(COUNT_FIELDS)), dtype=np.int64)
    present = np.zeros((len(methods), len(targets)), dtype=bool)
    if keys:
        mi, ti = np.array(keys, dtype=np.intp).T
        counts[mi, ti] = np.array(values, dtype=np.int64)
        present[mi, ti] = True
    table = CountsTable(tuple(methods), tuple(sid for _, sid, _ in targets), counts, present)
    digest = hashlib.sha256(counts.tobytes() + present.tobytes()).hexdigest()
    target_ids = [pk for pk, _, _ in targets]
    empty = ranking_scope.empty_outcomes(subset=subset, methods=table.methods, target_ids=target_ids)
    labels = cluster_labels((pk, sid) for pk, sid, _ in targets)
    identity = {
        "dataset": subset.dataset.slug,
        "dataset_version": subset.dataset.version,
        "subset": subset.slug,
        "definition": definition,
        # which verdict the report's headline holds: a snapshot of the CompaRNA 2013 protocol (before issue
        # 27) has the same inputs otherwise and must not be reused as a target-level one
        "verdict_protocol": VERDICT_PROTOCOL,
        "targets": len(targets),
        "methods": fingerprints,
        "counts_sha256": digest,
        "reference_pairs": [ref_pairs.get(pk, 0) for pk, _, _ in targets],
        "candidate_pairs": [length * (length - 1) // 2 for _, _, length in targets],
        # the unit of the clustered statistics: Rfam family, else sequence cluster (services.uncertainty)
        "clusters": [labels[pk] for pk, _, _ in targets],
        # the targets and which methods ended in a recorded failure on which (robustness ranking)
        "outcomes_sha256": ranking_scope.outcomes_digest(table.targets, empty),
    }
    return table, identity, target_ids, empty


def empty_report(*, seed: int) -> dict:
    """The report of a subset no method has scored yet: a target-level report with nobody in it (so that
    pages and ``manage.py rank`` never mistake it for one stored before issue 27), its 2013 view empty too."""
    return {
        "protocol": "target",
        "protocol_label": thresholds.PROTOCOL_TARGET_LABEL,
        "methods": [],
        "verdicts": {},
        "common_targets": {},
        "clusters": 0,
        "seed": seed,
        "conventions": {},
        "protocol_2013": {
            "label": thresholds.PROTOCOL_2013_LABEL, "methods": [], "verdicts": {}, "p_values": {},
            "conventions": {},
        },
    }


#: Threads computing the per-method bootstrap intervals beside the pairwise statistics (numpy releases the
#: GIL while it draws and sums, so they use the other cores of the machine).
THREADS = max(1, min(4, os.cpu_count() or 1))


def method_intervals(table: CountsTable, i: int, *, seed: int, clusters: list[str] | None) -> dict:
    """The mean per-structure MCC of method ``i`` with its 95 % bootstrap percentile CI, target-level and
    (with ``clusters``) family-clustered (SCIENCE.md §6): the fields :func:`compute_report` adds to the
    method's row."""
    own = table.counts[i][table.present[i]]
    per_target = metrics.mcc_from_arrays(*own.T) if len(own) else np.zeros(0)
    if not len(per_target):
        return {"mean_mcc": None, "mean_mcc_ci": None, "mean_mcc_small": True}
    ci = bootstrap_ci_mean(per_target, seed=seed)
    out = {"mean_mcc": ci.estimate, "mean_mcc_ci": [ci.low, ci.high], "mean_mcc_small": ci.small}
    if clusters:
        own_clusters = [clusters[k] for k in np.flatnonzero(table.present[i])]
        cci = bootstrap_ci_mean(per_target, seed=seed, clusters=own_clusters)
        out.update(mean_mcc_ci_clustered=[cci.low, cci.high], clusters=len(set(own_clusters)))
    return out


def compute_report(
    table: CountsTable, identity: dict, *, seed: int, finished: np.ndarray | None = None
) -> dict:
    """The engine's pairwise report, the robustness ranking, and pooled scores per method.

    ``finished`` (methods × targets) marks the predictions with a final outcome; the robustness ranking is
    then computed on the targets where every method has finished, a missing one there being a recorded
    failure (an empty structure). Without it, every target is used (blind rankings: a closed week).

    The per-method bootstrap intervals run in :data:`THREADS` threads while the pairwise statistics are
    computed (each method's draws come from its own generator: the result does not depend on the threads).
    """
    clusters = identity.get("clusters") or None
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        intervals = [
            pool.submit(method_intervals, table, i, seed=seed, clusters=clusters)
            for i in range(len(table.methods))
        ]
        report = (
            ranking_report(table, seed=seed, clusters=clusters) if table.methods else empty_report(seed=seed)
        )
        if table.methods:
            keep = np.ones(len(table.targets), dtype=bool) if finished is None else finished.all(axis=0)
            robust = robustness_ranking(
                table.select_targets(keep),
                reference_pairs=np.array(identity["reference_pairs"], dtype=np.int64)[keep],
                candidate_pairs=np.array(identity["candidate_pairs"], dtype=np.int64)[keep],
            )
            report["robustness"] = sorted(
                (
                    {"method": m, "rank": int(r), "mcc": float(x), "targets": int(c)}
                    for m, r, x, c in zip(
                        robust.methods, robust.ranks, robust.mcc, robust.coverage, strict=True
                    )
                ),
                key=lambda row: (row["rank"], row["method"]),
            )
            report.pop("robustness_error", None)
        if table.methods and clusters:
            # beside CompaRNA's verdicts: paired t statistics (the looks of a sequential dataset) and the
            # clustered pooled-MCC difference with its "practically equal" verdict
            report["pair_statistics"] = pairwise_statistics(table, clusters, seed=seed)
        for row in report["methods"]:
            i = table.methods.index(row["method"])
            summed = table.counts[i][table.present[i]].sum(axis=0)
            pooled = engine_counts(**{f: int(x) for f, x in zip(COUNT_FIELDS, summed, strict=True)})
            # The engine reports the pooled MCC; every other poolable metric of the registry is added here.
            row.update(pooled_scores(pooled, metrics=[m for m in POOLED if m.name not in row]))
            # Mean per-structure MCC with its 95 % bootstrap percentile CI (SCIENCE.md §6).
            row.update(intervals[i].result())
    return report


def add_sequential_verdicts(report: dict, *, history: list[dict]) -> None:
    """Group-sequential verdict of every pair (growing datasets): earlier snapshots' reports are the looks
    before this one (SCIENCE.md §6; :mod:`comparna.services.uncertainty`)."""
    pairs = report.get("pair_statistics", {}).get("pairs", {})
    report["sequential"] = {
        a: {b: sequential_for_pair(history=[*history, report], a=a, b=b) for b in row}
        for a, row in pairs.items()
    }


def inputs_hash(identity: dict, seed: int) -> str:
    blob = json.dumps({**identity, "seed": seed}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def rank_subset(*, subset: Subset, definition: str, seed: int | None = None) -> tuple[RankingSnapshot, bool]:
    """Store a ranking snapshot of ``subset`` unless one with identical inputs exists.

    Returns (snapshot, whether it is new).
    """
    seed = settings.RANKING_SEED if seed is None else seed
    table, identity, _, empty = subset_inputs(subset=subset, definition=definition)
    key = inputs_hash(identity, seed)
    existing = RankingSnapshot.objects.filter(subset=subset, definition=definition, inputs_hash=key).first()
    if existing is not None:
        return existing, False
    report = compute_report(table, identity, seed=seed, finished=table.present | empty)
    report.update(ranking_scope.scope_report(table, report, empty=empty))
    if is_sequential(subset.dataset):
        earlier = subset.rankings.filter(definition=definition).order_by("computed_at", "pk")
        add_sequential_verdicts(report, history=list(earlier.values_list("report", flat=True)))
    inputs = {**identity, "seed": seed, "conventions": report.get("conventions", {})}
    try:
        with transaction.atomic():
            snapshot = RankingSnapshot.objects.create(
                dataset=subset.dataset,
                subset=subset,
                definition=definition,
                seed=seed,
                inputs_hash=key,
                inputs=inputs,
                report=report,
            )
    except IntegrityError:  # computed concurrently by another worker: identical by construction
        return RankingSnapshot.objects.get(subset=subset, definition=definition, inputs_hash=key), False
    return snapshot, True


def recompute_rankings(
    *, dataset: Dataset | None = None, seed: int | None = None
) -> list[tuple[RankingSnapshot, bool]]:
    """Rank every subset × definition (of one dataset or all) whose inputs changed since the last snapshot."""
    datasets = [dataset] if dataset is not None else list(Dataset.objects.all())
    out = []
    for ds in datasets:
        for subset in ds.subsets.all():
            for definition in subset.definitions():
                out.append(rank_subset(subset=subset, definition=definition, seed=seed))
    return out


def latest_snapshots(*, dataset: Dataset) -> list[RankingSnapshot]:
    """The newest snapshot of each subset × definition of ``dataset``, in subset order."""
    snaps = []
    for subset in dataset.subsets.all():
        for definition in subset.definitions():
            snap = subset.rankings.filter(definition=definition).first()
            if snap is not None:
                snaps.append(snap)
    return snaps
