"""What every page module shares: the cache of immutable results, length bins, CIs, current scores."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models.fields.json import KeyTransform

from comparna.models import Dataset, RankingSnapshot, Score, Subset
from comparna.rna import statistics
from comparna.rna.metric_registry import COUNT_FIELDS, POOLED, ScoreAttributes
from predictors.models import Method, Prediction

CACHE_PREFIX = "comparna:pages:v1"
#: Length bins of SCIENCE.md §3 (RNA STRAND subsets), also used for the PDB set.
LENGTH_BINS: tuple[tuple[int, int | None, str], ...] = (
    (0, 200, "≤ 200 nt"),
    (201, 800, "201–800 nt"),
    (801, None, "> 800 nt"),
)
#: The per-target metrics the pages show and pool: those the registry computes from counts.
SCORE_FIELDS = tuple(m.name for m in POOLED)
FAILED_STATES = (
    Prediction.Status.FAILED,
    Prediction.Status.TIMEOUT,
    Prediction.Status.TOO_LONG,
    Prediction.Status.UNPARSABLE,
    Prediction.Status.INFRASTRUCTURE_ERROR,
)
UNASSIGNED_FAMILY = "(no family)"


def cached(key: str, compute: Callable[[], Any], timeout: int | None = None) -> Any:
    """``cache.get`` or compute and store; ``timeout=None`` keeps it (keys of immutable data)."""
    full = f"{CACHE_PREFIX}:{key}"
    value = cache.get(full)
    if value is None:
        value = compute()
        cache.set(full, value, timeout)
    return value


def cache_get(key: str) -> Any:
    """The cached value of a :func:`cached` key, or None."""
    return cache.get(f"{CACHE_PREFIX}:{key}")


def cache_set(key: str, value: Any, timeout: int | None) -> None:
    """Store a :func:`cached` key's value."""
    cache.set(f"{CACHE_PREFIX}:{key}", value, timeout)


DATA_VERSION_KEY = f"{CACHE_PREFIX}:data-version"


def data_version() -> str:
    """The token of the data the pages show, replaced by every background refresh
    (:func:`bump_data_version`): whole pages are cached under it (the public page cache)."""
    version = cache.get(DATA_VERSION_KEY)
    if version is None:
        version = bump_data_version()
    return version


def bump_data_version() -> str:
    """A new data version: pages cached under the previous one are no longer served."""
    import uuid

    version = uuid.uuid4().hex[:16]
    cache.set(DATA_VERSION_KEY, version, None)
    return version


def length_bin(length: int) -> str:
    for low, high, label in LENGTH_BINS:
        if length >= low and (high is None or length <= high):
            return label
    return LENGTH_BINS[0][2]


def ci_dict(values: Sequence[float], *, seed: int) -> dict | None:
    if len(values) == 0:
        return None
    ci = statistics.bootstrap_ci_mean(np.asarray(values, dtype=np.float64), seed=seed)
    return {"mean": ci.estimate, "low": ci.low, "high": ci.high, "n": ci.n, "small": ci.small}


@dataclass(frozen=True)
class TargetScore(ScoreAttributes):
    """One current-version score row with what the pages group by; ``row.mcc`` etc. read ``row.scores``."""

    method: str
    target_id: int
    source_id: str
    length: int
    rna_class: str
    counts: dict
    scores: dict[str, float]

    def __reduce__(self):
        # rebuilt by its constructor: unpickled from its state, each row had ``__setstate__`` looked up
        # through ScoreAttributes.__getattr__ (an AttributeError raised per row: most of the time a
        # computed comparison of 6 745 targets took to load from the cache)
        return (TargetScore, (self.method, self.target_id, self.source_id, self.length, self.rna_class,
                              self.counts, self.scores))


def current_scores(
    *,
    definition: str,
    subset: Subset | None = None,
    dataset: Dataset | None = None,
    methods: Iterable[str] | None = None,
) -> list[TargetScore]:
    """Scores of the current version of active methods under ``definition`` (in a subset or a dataset)."""
    qs = Score.objects.current().filter(definition=definition)
    if subset is not None:
        qs = qs.filter(prediction__target__subsets=subset)
    if dataset is not None:
        qs = qs.filter(prediction__target__dataset=dataset)
    if methods is not None:
        qs = qs.filter(prediction__method_version__method__name__in=list(methods))
    return target_scores(qs)


def target_scores(qs) -> list[TargetScore]:
    """:class:`TargetScore` rows of a ``Score`` queryset, by target source id."""
    rows = qs.values_list(
        "prediction__method_version__method__name",
        "prediction__target_id",
        "prediction__target__source_id",
        "prediction__target__length",
        "prediction__target__rna_class",
        *COUNT_FIELDS,
        *SCORE_FIELDS,
    ).order_by("prediction__target__source_id")
    out = []
    for name, tid, sid, length, rna_class, *rest in rows:
        counts = dict(zip(COUNT_FIELDS, rest[: len(COUNT_FIELDS)], strict=True))
        scores = dict(zip(SCORE_FIELDS, rest[len(COUNT_FIELDS) :], strict=True))
        out.append(TargetScore(name, tid, sid, length, rna_class or UNASSIGNED_FAMILY, counts, scores))
    return out


def method_directory() -> dict[str, dict]:
    """Method name -> {pk, input_kind, comparative} for linking and filtering (all methods, one query)."""
    return {
        name: {"pk": pk, "input_kind": kind, "comparative": kind != Method.InputKind.SINGLE}
        for name, pk, kind in Method.objects.public().values_list("name", "pk", "input_kind")
    }


def report_value(snapshot: RankingSnapshot, *path: str):
    """One value of the snapshot's report, extracted by the database (a report at 100 methods is about
    10 MB: loading it whole is most of a page's time); cached for ever, as the snapshot is immutable."""
    return report_values(snapshot, path)[0]


def _report_value_key(snapshot: RankingSnapshot, path: Sequence[str]) -> str:
    # the names as given, never in a key
    digest = hashlib.sha256(json.dumps(list(path)).encode()).hexdigest()[:24]
    return f"report-value:{snapshot.pk}:{digest}"


def report_values(snapshot: RankingSnapshot, *paths: Sequence[str]) -> list:
    """The report's value at each path, each cached for ever; those not cached yet are extracted by the
    database in one query (the report is read once, not once per value), or walked in the report when the
    snapshot was loaded with it."""
    keys = [_report_value_key(snapshot, path) for path in paths]
    found = {key: cache_get(key) for key in keys}
    missing = [(key, path) for key, path in zip(keys, paths, strict=True) if found[key] is None]
    if missing:
        if "report" in snapshot.get_deferred_fields():
            values = _extract(snapshot, [path for _, path in missing])
        else:
            values = [_walk(snapshot.report, path) for _, path in missing]
        for (key, _), value in zip(missing, values, strict=True):
            found[key] = {"value": value}
            cache_set(key, found[key], None)
    return [found[key]["value"] for key in keys]


def _walk(report: dict, path: Sequence[str]):
    value = report
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _extract(snapshot: RankingSnapshot, paths: list[Sequence[str]]) -> list:
    """The values at ``paths`` of the snapshot's report, by the database in one query. PostgreSQL decompresses
    a large jsonb once per operator: the report (about 1 MB compressed at 100 methods) is made a value once
    (``|| '{}'``, in a subquery) and every path is read from it."""
    from django.db import connection

    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(RankingSnapshot._meta.db_table)
        items = ", ".join(["r #> %s::text[]"] * len(paths))
        sql = (f"SELECT jsonb_build_array({items})::text FROM "
               f"(SELECT report || '{{}}'::jsonb AS r FROM {table} WHERE id = %s OFFSET 0) x")
        with connection.cursor() as cursor:
            cursor.execute(sql, [*[list(path) for path in paths], snapshot.pk])
            row = cursor.fetchone()
        return json.loads(row[0]) if row else [None] * len(paths)
    exprs = {}
    for i, path in enumerate(paths):
        expr = "report"
        for part in path:
            expr = KeyTransform(part, expr)
        exprs[f"v{i}"] = expr
    row = RankingSnapshot.objects.filter(pk=snapshot.pk).values(**exprs).first() or {}
    return [row.get(f"v{i}") for i in range(len(paths))]
