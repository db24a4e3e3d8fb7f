"""Rankings from stored counts: build the engine's input for a subset and store immutable snapshots."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.rna import metrics, thresholds
from comparna.rna.clustered import Clusters, cluster_codes, select_clusters
from comparna.rna.metric_registry import POOLED, engine_counts, pooled_scores
from comparna.rna.pair_statistics import pairwise_statistics
from comparna.rna.ranking import (
    COUNT_FIELDS,
    CountsTable,
    protocol_2013_report,
    ranking_report,
    robustness_counts,
    robustness_report,
)
from comparna.rna.shared_draws import cluster_bootstrap_means_many
from comparna.rna.statistics import CONFIDENCE, RESAMPLES, bootstrap_ci_mean
from comparna.services import ranking_scope
from comparna.services.uncertainty import (
    PairHistory,
    cluster_labels,
    is_sequential,
    pair_history,
    sequential_verdicts,
)
from predictors.models import MethodVersion, Prediction

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


def subset_inputs(
    *, subset: Subset, definition: str, cache: RankingInputs | None = None
) -> tuple[CountsTable, dict, list[int], np.ndarray]:
    """:func:`build_counts_table` plus the target ids in table order and the finished-failure mask.

    With ``cache`` the scores, failures, references and cluster labels come from its whole-table reads
    (:class:`RankingInputs`: the same result, a few queries for every subset of a run).
    """
    targets = list(subset.targets.order_by("source_id").values_list("pk", "source_id", "length"))
    if cache is not None:
        table, fingerprints, empty = cache.table(targets, definition)
        ref_pairs = cache.reference_pairs(definition)
        labels = cache.labels(subset.dataset, targets)
    else:
        table, fingerprints = _query_table(subset, definition, targets)
        ref_pairs = dict(
            subset.targets.filter(references__definition=definition).values_list("pk", "references__n_pairs")
        )
        empty = ranking_scope.empty_outcomes(
            subset=subset, methods=table.methods, target_ids=[pk for pk, _, _ in targets]
        )
        labels = cluster_labels((pk, sid) for pk, sid, _ in targets)
    counts, present = table.counts, table.present
    digest = hashlib.sha256(counts.tobytes() + present.tobytes()).hexdigest()
    target_ids = [pk for pk, _, _ in targets]
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


def _query_table(subset: Subset, definition: str, targets: list[tuple]) -> tuple[CountsTable, dict[str, str]]:
    """The counts table of one subset from its own query, and each method's current fingerprint."""
    target_ix = {pk: n for n, (pk, _, _) in enumerate(targets)}
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
    return CountsTable(tuple(methods), tuple(sid for _, sid, _ in targets), counts, present), fingerprints


def _fetch_int_rows(queryset, width: int, *, block: int = 100_000) -> np.ndarray:
    """The rows of an integer ``values_list`` queryset as an (n, width) int64 array, fetched and converted
    ``block`` rows at a time: on PostgreSQL through a server-side cursor, so that neither the client library
    nor Python ever holds millions of rows at once."""
    sql, params = queryset.query.sql_with_params()
    parts = [np.zeros((0, width), dtype=np.int64)]

    def read(cursor) -> None:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(block):
            parts.append(np.array(rows, dtype=np.int64).reshape(len(rows), width))

    if connection.vendor == "postgresql":
        connection.ensure_connection()
        with transaction.atomic(), connection.connection.cursor(name="ranking_inputs") as cursor:
            read(cursor)
    else:
        with connection.cursor() as cursor:
            read(cursor)
    return np.concatenate(parts)


class RankingInputs:
    """The inputs of every subset ranking of a run read with a few whole-table queries.

    :func:`subset_inputs` queries the scores, failures, references and cluster labels of one subset (each
    query scans the score and prediction tables: ~10 s at 2 M predictions); a run over every subset ×
    definition reads them once here — the current public scores of a definition as one integer array, the
    recorded failures, the references of a definition, the cluster labels of a dataset — and cuts each
    subset's table from them. The tables, identities and masks are those :func:`subset_inputs` builds
    without it (methods in the database's order of their names, targets in the subset's order).
    """

    def __init__(self) -> None:
        self._scores: dict[str, np.ndarray] = {}
        self._versions: dict[int, tuple[int, str, str]] | None = None
        self._failures: np.ndarray | None = None
        self._references: dict[str, dict[int, int]] = {}
        self._labels: dict[int, dict[int, str]] = {}

    def _scores_of(self, definition: str) -> np.ndarray:
        """(n, 7) rows (method version, target, tp, fn, fp, fp_compatible, tn) of the current scores."""
        if definition not in self._scores:
            qs = Score.objects.current().filter(definition=definition)
            qs = qs.values_list("prediction__method_version_id", "prediction__target_id", *COUNT_FIELDS)
            self._scores[definition] = _fetch_int_rows(qs.order_by(), 2 + len(COUNT_FIELDS))
        return self._scores[definition]

    def _version_order(self) -> dict[int, tuple[int, str, str]]:
        """``{version id: (position, method name, fingerprint)}`` of every current version, positions in
        the database's order of the method names (the order of the per-subset query's ORDER BY)."""
        if self._versions is None:
            rows = (
                MethodVersion.objects.filter(is_current=True)
                .order_by("method__name", "pk")
                .values_list("pk", "method__name", "fingerprint")
            )
            self._versions = {pk: (n, name, fp) for n, (pk, name, fp) in enumerate(rows)}
        return self._versions

    def _failures_of(self) -> np.ndarray:
        """(n, 2) rows (method version, target) of the current versions' recorded failures."""
        if self._failures is None:
            qs = Prediction.objects.public().filter(
                method_version__is_current=True,
                method_version__method__active=True,
                status__in=ranking_scope.EMPTY_OUTCOMES,
            )
            self._failures = _fetch_int_rows(qs.values_list("method_version_id", "target_id").order_by(), 2)
        return self._failures

    def table(self, targets: list[tuple], definition: str) -> tuple[CountsTable, dict[str, str], np.ndarray]:
        """The counts table of ``targets`` ((pk, source id, length) in table order), the fingerprints of its
        methods and its finished-failure mask (:func:`comparna.services.ranking_scope.empty_outcomes`)."""
        ids = np.array([pk for pk, _, _ in targets], dtype=np.int64)
        rows = self._scores_of(definition)
        here, column = _positions(rows[:, 1], ids)
        rows = rows[here]
        versions = self._version_order()
        if not set(np.unique(rows[:, 0]).tolist()) <= versions.keys():  # a version made current meanwhile
            self._versions = None
            versions = self._version_order()
        present_versions = sorted((int(v) for v in np.unique(rows[:, 0])), key=lambda v: versions[v][0])
        # method row of each version (−1: a version without a score here)
        method_of = np.full(max(versions, default=0) + 1, -1, dtype=np.intp)
        method_of[present_versions] = np.arange(len(present_versions))
        mi = method_of[rows[:, 0]]
        counts = np.zeros((len(present_versions), len(targets), len(COUNT_FIELDS)), dtype=np.int64)
        present = np.zeros((len(present_versions), len(targets)), dtype=bool)
        counts[mi, column] = rows[:, 2:]
        present[mi, column] = True
        names = tuple(versions[v][1] for v in present_versions)
        table = CountsTable(names, tuple(sid for _, sid, _ in targets), counts, present)
        empty = np.zeros(present.shape, dtype=bool)
        if names and len(targets):
            failed = self._failures_of()
            failed = failed[failed[:, 0] < method_of.size]
            here, column = _positions(failed[:, 1], ids)
            mf = method_of[failed[here, 0]]
            empty[mf[mf >= 0], column[mf >= 0]] = True
        return table, {versions[v][1]: versions[v][2] for v in present_versions}, empty

    def reference_pairs(self, definition: str) -> dict[int, int]:
        """``{target pk: reference pairs}`` under ``definition``."""
        if definition not in self._references:
            rows = ReferenceStructure.objects.filter(definition=definition)
            self._references[definition] = dict(rows.values_list("target_id", "n_pairs"))
        return self._references[definition]

    def labels(self, dataset: Dataset, targets: list[tuple]) -> dict[int, str]:
        """The cluster label of every target (:func:`comparna.services.uncertainty.cluster_labels`), read for
        the whole dataset at its first use."""
        known = self._labels.get(dataset.pk)
        if known is None:
            everything = Target.objects.filter(dataset=dataset).values_list("pk", "source_id")
            known = self._labels[dataset.pk] = cluster_labels(everything)
        missing = [(pk, sid) for pk, sid, _ in targets if pk not in known]
        if missing:  # a target of another dataset in the subset
            known.update(cluster_labels(missing))
        return known


def _positions(values: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which ``values`` are among ``ids`` (mask) and, for those, their index in ``ids``."""
    if ids.size == 0:
        return np.zeros(values.size, dtype=bool), np.zeros(0, dtype=np.intp)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    k = np.minimum(np.searchsorted(sorted_ids, values), ids.size - 1)
    hit = sorted_ids[k] == values
    return hit, order[k[hit]]


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


def method_intervals(table: CountsTable, i: int, *, seed: int) -> dict:
    """The mean per-structure MCC of method ``i`` with its 95 % bootstrap percentile CI (SCIENCE.md §6):
    the target-level fields :func:`compute_report` adds to the method's row."""
    per_target = _own_mccs(table, i)
    if not len(per_target):
        return {"mean_mcc": None, "mean_mcc_ci": None, "mean_mcc_small": True}
    ci = bootstrap_ci_mean(per_target, seed=seed)
    return {"mean_mcc": ci.estimate, "mean_mcc_ci": [ci.low, ci.high], "mean_mcc_small": ci.small}


def clustered_intervals(table: CountsTable, *, seed: int, clusters: Clusters) -> dict[int, dict]:
    """Every method's family-clustered 95 % bootstrap CI of its mean per-structure MCC (its targets'
    ``clusters``), ``{i: {"mean_mcc_ci_clustered", "clusters"}}``: the methods with the same number of
    clusters share one set of draws (:func:`comparna.rna.shared_draws.cluster_bootstrap_means_many`; the
    same numbers as one cluster bootstrap per method, at a fraction of the cost)."""
    samples, index = [], []
    for i in range(len(table.methods)):
        per_target = _own_mccs(table, i)
        if len(per_target):
            samples.append((per_target, select_clusters(clusters, table.present[i])))
            index.append(i)
    means = cluster_bootstrap_means_many(samples, resamples=RESAMPLES, seed=seed)
    tail = 100 * (1 - CONFIDENCE) / 2
    out = {}
    for i, (_, own), draws in zip(index, samples, means, strict=True):
        low, high = np.percentile(draws, [tail, 100 - tail])
        out[i] = {"mean_mcc_ci_clustered": [float(low), float(high)], "clusters": own.count}
    return out


def _own_mccs(table: CountsTable, i: int) -> np.ndarray:
    """Method ``i``'s per-target MCC on the targets it scored."""
    own = table.counts[i][table.present[i]]
    return metrics.mcc_from_arrays(*own.T) if len(own) else np.zeros(0)


def compute_report(
    table: CountsTable, identity: dict, *, seed: int, finished: np.ndarray | None = None
) -> dict:
    """The engine's pairwise report, the robustness ranking, and pooled scores per method.

    ``finished`` (methods × targets) marks the predictions with a final outcome; the robustness ranking is
    then computed on the targets where every method has finished, a missing one there being a recorded
    failure (an empty structure). Without it, every target is used (blind rankings: a closed week).

    The CompaRNA 2013 protocol, the pair statistics and the per-method bootstrap intervals run in
    :data:`THREADS` threads while the target-level verdicts are computed: each is a pure function of the
    table and the seed (every draw from its own seeded generator), so the result does not depend on the
    threads.
    """
    clusters = identity.get("clusters") or None
    codes = cluster_codes(clusters) if clusters else None
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        # the longest first, so that they start at once
        view_2013 = pool.submit(protocol_2013_report, table, seed=seed) if table.methods else None
        with_stats = bool(table.methods and clusters)
        stats = pool.submit(pairwise_statistics, table, clusters, seed=seed) if with_stats else None
        clustered = pool.submit(clustered_intervals, table, seed=seed, clusters=codes) if codes else None
        intervals = [pool.submit(method_intervals, table, i, seed=seed) for i in range(len(table.methods))]
        if table.methods:
            report = ranking_report(table, seed=seed, clusters=clusters, with_2013=False, robustness=False)
            report["protocol_2013"] = view_2013.result()  # before the robustness ranking, added below
        else:
            report = empty_report(seed=seed)
        if table.methods:
            keep = np.ones(len(table.targets), dtype=bool) if finished is None else finished.all(axis=0)
            kept = table.select_targets(keep)
            filled = robustness_counts(
                kept,
                reference_pairs=np.array(identity["reference_pairs"], dtype=np.int64)[keep],
                candidate_pairs=np.array(identity["candidate_pairs"], dtype=np.int64)[keep],
            )
            # pooled MCC with its n and a family-bootstrap interval of each rank (issue 35)
            report.update(robustness_report(
                kept.methods, filled, kept.present.sum(axis=1), seed=seed,
                clusters=[c for c, k in zip(clusters, keep, strict=True) if k] if clusters else None,
            ))
            report.pop("robustness_error", None)
        if stats is not None:
            # beside CompaRNA's verdicts: paired t statistics (the looks of a sequential dataset) and the
            # clustered pooled-MCC difference with its "practically equal" verdict
            report["pair_statistics"] = stats.result()
        for row in report["methods"]:
            i = table.methods.index(row["method"])
            summed = table.counts[i][table.present[i]].sum(axis=0)
            pooled = engine_counts(**{f: int(x) for f, x in zip(COUNT_FIELDS, summed, strict=True)})
            # The engine reports the pooled MCC; every other poolable metric of the registry is added here.
            row.update(pooled_scores(pooled, metrics=[m for m in POOLED if m.name not in row]))
            # Mean per-structure MCC with its 95 % bootstrap percentile CI (SCIENCE.md §6).
            row.update(intervals[i].result())
            if clustered is not None:
                row.update(clustered.result().get(i, {}))
    return report


def add_sequential_verdicts(report: dict, *, history: PairHistory) -> None:
    """Group-sequential verdict of every pair (growing datasets): the earlier snapshots' statistics
    (:func:`comparna.services.uncertainty.pair_history`) are the looks before this one (SCIENCE.md §6)."""
    report["sequential"] = sequential_verdicts(report, history=history)


def inputs_hash(identity: dict, seed: int) -> str:
    blob = json.dumps({**identity, "seed": seed}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def rank_subset(
    *, subset: Subset, definition: str, seed: int | None = None, cache: RankingInputs | None = None
) -> tuple[RankingSnapshot, bool]:
    """Store a ranking snapshot of ``subset`` unless one with identical inputs exists.

    ``cache`` (:class:`RankingInputs`) serves the inputs of many subsets from a few queries.
    Returns (snapshot, whether it is new).
    """
    seed = settings.RANKING_SEED if seed is None else seed
    table, identity, _, empty = subset_inputs(subset=subset, definition=definition, cache=cache)
    key = inputs_hash(identity, seed)
    existing = RankingSnapshot.objects.filter(subset=subset, definition=definition, inputs_hash=key).first()
    if existing is not None:
        return existing, False
    report = compute_report(table, identity, seed=seed, finished=table.present | empty)
    report.update(ranking_scope.scope_report(table, report, empty=empty))
    if is_sequential(subset.dataset):
        earlier = subset.rankings.filter(definition=definition).order_by("computed_at", "pk")
        add_sequential_verdicts(report, history=pair_history(earlier))  # (t, n) per pair, no whole report
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
    """Rank every subset × definition (of one dataset or all) whose inputs changed since the last snapshot.

    The inputs of every subset are read with a few whole-table queries (:class:`RankingInputs`).
    """
    datasets = [dataset] if dataset is not None else list(Dataset.objects.all())
    cache = RankingInputs()
    out = []
    for ds in datasets:
        for subset in ds.subsets.all():
            for definition in subset.definitions():
                out.append(rank_subset(subset=subset, definition=definition, seed=seed, cache=cache))
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
