"""The public ETA from the workers' schedule: when will the last prediction queued in a scope be run?

The workers run queued predictions in one order (:mod:`predictors.scheduling`: by schedule rank, every
method's jobs of a block together, datasets taking turns), all sharing the same CPUs. A scope — the site, a
dataset, a subset, one method on a subset — is finished when the workers reach its last queued prediction,
that is after every prediction queued *before* it in that order, of every method and dataset. Its own rate
cannot say when: a dataset that had all the workers for ten minutes finishes five times later once the
others' turns come (measured in ``make run``, stop 43), and short targets run first finish faster than the
long ones after them. So the ETA here is a schedule's, from two measurements over the same window:

- **each method version's cost**: the seconds its finished predictions ran (``runtime_s``) per unit of a
  length model fitted to those runs (:func:`cost_model`: a fixed cost plus the length to a power, fitted to
  runs of a second or more; the scheduler's model, :func:`predictors.scheduling.job_cost`, with the declared
  complexity when those are too few), so a long target queued later costs what its length says, but never
  more than the version's time limit (no job runs longer);
- **the workers' throughput**: the seconds of public predictions run per minute of the window (each
  prediction's runtime clipped to the window), whatever number of workers ran them.

``ETA(scope) = Σ cost of the public predictions queued up to the scope's last schedule rank / throughput``.
It is consistent by construction — a method's last rank on a subset is at most the subset's, a subset's at
most its dataset's, the site's is the largest — so a subset's ETA is at least each of its methods' and at most
its dataset's, and the site's is the slowest dataset's. Queued work of a version with no measured cost in
the window (nothing of it finished yet) is not counted: the ETA is then a lower bound and names it.
Development methods are not in it (they have their own share of the workers; their owners see their own
rate, :mod:`comparna.owners.eta`).
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import ExpressionWrapper, F, FloatField, Max, Sum, Value
from django.db.models.functions import Least, Power

from predictors.models import MethodVersion, Prediction
from predictors.scheduling import JOB_OVERHEAD_NT, MethodCost

#: What the workers still have to run (a web service's awaited upload is not theirs).
WORKER_QUEUE = (Prediction.Status.QUEUED, Prediction.Status.RUNNING)
NOT_RUN = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING,
           Prediction.Status.TOO_LONG)


@dataclass
class Schedule:
    """Queued public work by version and rank, each version's measured cost and the workers' throughput."""

    #: version pk -> (ascending schedule ranks, cumulative units queued up to each)
    backlog: dict[int, tuple[list[int], list[float]]] = field(default_factory=dict)
    #: version pk -> measured seconds per unit (versions with nothing finished in the window are absent)
    scale: dict[int, float] = field(default_factory=dict)
    #: seconds of predictions run per minute of the window (None: nothing ran)
    throughput: float | None = None

    def minutes_until(self, rank: int) -> tuple[float | None, set[int]]:
        """Minutes until the workers have run every queued prediction up to ``rank``, and the versions with
        queued work there whose cost is unmeasured (not counted: a lower bound). None: no throughput."""
        seconds, unmeasured = 0.0, set()
        for version, (ranks, cum) in self.backlog.items():
            i = bisect_right(ranks, rank)
            if not i:
                continue
            if version in self.scale:
                seconds += self.scale[version] * cum[i - 1]
            else:
                unmeasured.add(version)
        if not self.throughput:
            return None, unmeasured
        return seconds / self.throughput, unmeasured


def build_schedule(queued: dict[int, dict[int, float]], finished: list[tuple[int, float, float, float]],
                   *, span_minutes: float) -> Schedule:
    """A :class:`Schedule` from ``queued`` {version: {rank: units}} and the window's ``finished``
    predictions ``(version, units, runtime s, runtime s inside the window)``, over ``span_minutes``."""
    backlog = {}
    for version, by_rank in queued.items():
        ranks = sorted(by_rank)
        cum, total = [], 0.0
        for r in ranks:
            total += by_rank[r]
            cum.append(total)
        backlog[version] = (ranks, cum)
    seconds, units = defaultdict(float), defaultdict(float)
    inside = 0.0
    for version, u, runtime, clipped in finished:
        seconds[version] += runtime
        units[version] += u
        inside += clipped
    scale = {v: seconds[v] / units[v] for v in units if units[v] > 0}
    throughput = inside / span_minutes if inside > 0 and span_minutes > 0 else None
    return Schedule(backlog=backlog, scale=scale, throughput=throughput)


#: Runtimes under this (seconds) are mostly a batch's overhead and timer noise, not the length's part: not
#: used to fit how runtime grows with length (make run, stop 44: fitted to runs under a second of targets up
#: to 189 nt, RNAfold and LinearFold looked n^6, and the site's ETA said 423 days).
FIT_FLOOR_S = 1.0
#: The fewest such runtimes, and the least length ratio among them, a fit needs.
FIT_MIN_RUNS, FIT_MIN_SPREAD = 3, 1.5
#: Fitted exponents are kept within these bounds and rounded to this step (versions of one model share a
#: query).
FIT_BOUNDS, FIT_STEP = (1.0, 6.0), 0.25


def cost_model(runs: list[tuple[int, float]], declared: float) -> tuple[float, float]:
    """``(a, k)`` of a version's cost in units ``a + (length / 400) ** k`` (:func:`units`), from its ``runs``
    ``(length, runtime s)`` in the window: ``a`` is its fixed cost (the tenth percentile of the runtimes) in
    units of the length's part at 400 nt, and ``k`` the slope of log runtime on log length over the runs of
    :data:`FIT_FLOOR_S` or more (where a job's fixed cost is a small part), when there are
    :data:`FIT_MIN_RUNS` of them spanning a length ratio of :data:`FIT_MIN_SPREAD`, within
    :data:`FIT_BOUNDS` and never below the declared exponent (HotKnots' runtimes of a second or more vary
    with the sequence as much as with its length: fitted alone they looked n^1.75); else the scheduler's
    model (``a`` = 1, ``k`` declared). A declared complexity can be too low (``make run``, stop 44:
    HotKnots, declared cubic, took 3 s on a 107-nt target and 104 s on a 189-nt one)."""
    import math

    if not runs:
        return 1.0, float(declared)
    fixed = sorted(rt for _, rt in runs)[len(runs) // 10]  # a job's fixed cost: its shortest runs'
    points = [(math.log(n / JOB_OVERHEAD_NT), math.log(rt)) for n, rt in runs if n > 0 and rt >= FIT_FLOOR_S]
    xs = [x for x, _ in points]
    if len(points) < FIT_MIN_RUNS or max(xs) - min(xs) < math.log(FIT_MIN_SPREAD):
        return 1.0, float(declared)
    mx, my = sum(xs) / len(xs), sum(y for _, y in points) / len(points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    low, high = max(FIT_BOUNDS[0], float(declared)), FIT_BOUNDS[1]  # never below the declared growth
    k = round(min(max(slope, low), high) / FIT_STEP) * FIT_STEP
    at_400 = math.exp(my - k * mx)  # the length's part at 400 nt, with the exponent kept
    return fixed / at_400, k


def units(length: int, exponent: float, fixed: float = 1.0) -> float:
    """A job's cost in units of a version's runtime at 400 nt: its fixed cost ``fixed`` plus the length's
    power (with ``fixed`` 1, the scheduler's :func:`predictors.scheduling.job_cost` of a target it runs)."""
    return fixed + (length / JOB_OVERHEAD_NT) ** exponent


def _units_expression(exponent: float, fixed: float = 1.0):
    """:func:`units` in SQL (Django gives SQLite the POWER function PostgreSQL has)."""
    length = ExpressionWrapper(F("target__length") * Value(1.0 / JOB_OVERHEAD_NT), output_field=FloatField())
    return ExpressionWrapper(Value(float(fixed)) + Power(length, Value(float(exponent))),
                             output_field=FloatField())


def units_sum(exponent: float, fixed: float = 1.0):
    """An aggregate: the :func:`units` of predictions of a version with this cost model."""
    return Sum(_units_expression(exponent, fixed))


def worker_queue():
    """The public predictions the workers still have to run: queued or running, of active methods."""
    return Prediction.objects.public().filter(status__in=WORKER_QUEUE, method_version__method__active=True)


def measure_schedule(*, now: dt.datetime, since: dt.datetime, span_minutes: float) -> Schedule:
    """The :class:`Schedule` of the public predictions as they are now (the window: ``since``..``now``;
    rates over ``span_minutes``, the one measuring time of :func:`measuring_minutes`).
    Grows with the queue's (version, rank) pairs and the window's finished predictions, not with all data:
    run in the background (:func:`comparna.services.tallies.refresh_tallies`) or before the first count."""
    specs = dict(MethodVersion.objects.values_list("pk", "spec"))
    start = now - dt.timedelta(minutes=span_minutes)
    ran = (
        Prediction.objects.public()
        .filter(finished_at__gte=since, finished_at__lte=now, runtime_s__isnull=False)
        .exclude(status__in=NOT_RUN)
        .values_list("method_version_id", "target__length", "runtime_s", "finished_at")
    )
    runs: dict[int, list[tuple[int, float, float]]] = defaultdict(list)
    for version, length, runtime, finished_at in ran.iterator(chunk_size=5000):
        runs[version].append((length, runtime, min(runtime, max((finished_at - start).total_seconds(), 0.0))))
    models = {pk: cost_model([(n, rt) for n, rt, _ in runs.get(pk, ())],
                             MethodCost.from_spec(spec or {}).exponent) for pk, spec in specs.items()}
    finished = [(version, units(n, models[version][1], models[version][0]), rt, clipped)
                for version, rows in runs.items() for n, rt, clipped in rows if version in models]
    scale = build_schedule({}, finished, span_minutes=span_minutes).scale
    queued: dict[int, dict[int, float]] = defaultdict(dict)
    waiting = worker_queue().values_list("method_version_id", flat=True).distinct().order_by()
    for version in waiting:
        fixed, exponent = models.get(version, (1.0, 3.0))
        cost = _units_expression(exponent, fixed)
        limit = float((specs.get(version) or {}).get("time_limit_s") or 0)
        if version in scale and limit > 0:  # no job runs longer than its time limit
            cost = Least(cost, Value(limit / scale[version]), output_field=FloatField())
        rows = (
            worker_queue().filter(method_version=version)
            .values("schedule_rank").annotate(u=Sum(cost)).order_by()
        )
        for row in rows:
            queued[version][row["schedule_rank"]] = float(row["u"] or 0.0)
    return build_schedule(queued, finished, span_minutes=span_minutes)


def measuring_minutes(first: dt.datetime | None, *, now: dt.datetime, window_minutes: float) -> float:
    """The one measuring time of every rate: the window, or from the start of the first prediction finished
    in it (of any method: the workers' start) when that is later, but not under a minute."""
    since = now - dt.timedelta(minutes=window_minutes)
    if first is not None and first > since:
        return max((now - first).total_seconds() / 60.0, 1.0)
    return float(window_minutes)


def last_ranks(*, by: str, **only) -> dict[tuple[int, int], int]:
    """{(scope pk, version pk): last schedule rank of the version's public queue there}, ``by`` a dataset
    (``"target__dataset_id"``) or a subset (``"target__subsets"``); ``only``: a filter of the queue."""
    rows = (worker_queue().filter(**only).values(by, "method_version_id")
            .annotate(last=Max("schedule_rank")).order_by())
    return {(r[by], r["method_version_id"]): r["last"] for r in rows if r[by] is not None}


def scope_etas(schedule: Schedule, *, subset=None, dataset=None) -> list[dict]:
    """Every scope's ETA as ``{"scope", "dataset", "subset", "version", "minutes", "unmeasured"}`` rows:
    ``scope`` "dataset" or "subset" with ``version`` a method version with queued work there (at its last
    rank there) or None (the scope's last rank); one "site" row (the last rank of all, ``dataset`` the one
    holding it). ``unmeasured``: the versions with uncounted work before it (a lower bound). With ``subset``
    or ``dataset`` (a page counting live, before the first background count), only that scope's rows."""
    from comparna.models import Subset

    subset_dataset = dict(Subset.objects.values_list("pk", "dataset_id"))
    out: list[dict] = []
    last: dict[tuple[str, int], tuple[int, int]] = {}  # (scope, pk) -> (rank, dataset)

    def add(scope, dataset, subset, version, rank):
        minutes, unmeasured = schedule.minutes_until(rank)
        out.append({"scope": scope, "dataset": dataset, "subset": subset, "version": version,
                    "minutes": minutes, "unmeasured": sorted(unmeasured)})

    if subset is None:
        only = {"target__dataset": dataset} if dataset is not None else {}
        for (ds, version), rank in last_ranks(by="target__dataset_id", **only).items():
            add("dataset", ds, None, version, rank)
            last[("dataset", ds)] = max(last.get(("dataset", ds), (rank, ds)), (rank, ds))
    if subset is not None or dataset is None:
        only = {"target__subsets": subset} if subset is not None else {}
        subsets = last_ranks(by="target__subsets", **only)
    else:
        subsets = {}
    for (sub, version), rank in subsets.items():
        add("subset", subset_dataset[sub], sub, version, rank)
        ds = subset_dataset[sub]
        last[("subset", sub)] = max(last.get(("subset", sub), (rank, ds)), (rank, ds))
    for (scope, pk), (rank, ds) in last.items():
        add(scope, ds, pk if scope == "subset" else None, None, rank)
    datasets = [v for (scope, _), v in last.items() if scope == "dataset"]
    if datasets and subset is None and dataset is None:
        rank, ds = max(datasets)
        add("site", ds, None, None, rank)
    return out


def pick(rows: list[dict], *, subset=None, dataset=None) -> list[dict]:
    """One scope's rows of :func:`scope_etas` (what :func:`comparna.services.tallies.scheduled_etas` reads
    from the stored ones): a subset's, a dataset's, or the site's row with every method's on each dataset."""
    if subset is not None:
        return [r for r in rows if r["scope"] == "subset" and r["subset"] == subset.pk]
    if dataset is not None:
        return [r for r in rows if r["scope"] == "dataset" and r["dataset"] == dataset.pk]
    return [r for r in rows if r["scope"] == "site" or (r["scope"] == "dataset" and r["version"] is not None)]
