"""Prediction progress with an ETA from measured throughput, and whether a ranking has settled.

Every page that shows progress reads it here (home, rankings, the owner's method page); the ETA's sentence
too (:func:`eta_sentence`), so pages cannot word or compute it differently (issue 37).

- **One ETA: the workers' schedule** (:mod:`comparna.services.backlog`). A public scope (the site, a dataset,
  a subset, one method there) is done when the workers reach its last queued prediction in the order they
  run them; its ETA is the measured compute of every public prediction queued up to that rank over the
  workers' measured throughput, both over the last :data:`WINDOW_MINUTES` minutes (or since the workers'
  first start in it, when later: one measuring time for everything). So a subset's ETA is at least each of
  its methods' and at most its dataset's, and the site's is the slowest dataset's, by construction. Work of
  a version with no measured cost yet is left out: the ETA is then "at least" and names it.
- **The workers' view** (``include_private=True``: development methods counted too): each method's ETA there
  is its queue on each dataset at its own rate there, its slowest dataset deciding. An owner's page gives its
  method's own pooled estimate instead (:func:`comparna.owners.eta.queue_eta`).
- **Public figures count public methods only**: development methods' predictions are not in them (their
  owners see their own estimate, :mod:`comparna.owners.eta`, with ``include_private=True``).
- **Settled**: a ranking snapshot is *settled* when no prediction of an active method's current version on
  the subset's targets is queued, running or awaiting an upload, and the snapshot's inputs are the current
  ones (recomputing it now would give the same ranking). Until then it is *provisional*.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

from django.db.models import Count, Min, Q
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.services import backlog, tallies
from comparna.services.backlog import measuring_minutes
from comparna.services.rankings import build_counts_table, inputs_hash
from predictors.models import Method, MethodVersion, Prediction

#: The throughput window, minutes (the tallies count finished predictions in the same one; /about/ states it).
WINDOW_MINUTES = tallies.WINDOW_MINUTES
#: The shortest measuring time a public ETA is given for (minutes): over the workers' first minutes, their
#: start-up makes the throughput look a third of what it becomes (``make run``, stop 44: "at least 20 h 41"
#: at minute 1, "about 4 h 51" from minute 7 on).
MIN_MEASURING_MINUTES = 5
UNFINISHED = (Prediction.Status.QUEUED, Prediction.Status.RUNNING, Prediction.Status.AWAITING)
#: What the workers still have to run (the ETA's numerator).
WORKER_QUEUE = (Prediction.Status.QUEUED, Prediction.Status.RUNNING)

SETTLED_DEFINITION = (
    "Settled means: no prediction of an active method on this subset's targets is queued, running or "
    "awaiting an upload, and this snapshot was computed from the current scores (recomputing it would give "
    "the same ranking). Until then the ranking is provisional: ranks and scores can still change."
)


def eta_text(minutes: float | None) -> str:
    """A rounded human duration: "under a minute", "12 min", "3 h 05 min", "2 d 4 h"."""
    if minutes is None or math.isnan(minutes):
        return "unknown"
    if minutes < 1:
        return "under a minute"
    m = int(round(minutes))
    if m < 60:
        return f"{m} min"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h} h {m:02d} min"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


def _eta(pending: int, rate: float | None, now: dt.datetime) -> dict | None:
    if pending == 0:
        return {"minutes": 0.0, "text": "done", "at": now}
    if not rate:
        return None
    minutes = pending / rate
    return {"minutes": minutes, "text": eta_text(minutes), "at": now + dt.timedelta(minutes=minutes)}


def prediction_progress(
    *,
    dataset: Dataset | None = None,
    subset: Subset | None = None,
    window_minutes: float = WINDOW_MINUTES,
    now: dt.datetime | None = None,
    include_private: bool = False,
    live: bool = False,
) -> dict:
    """Predictions of public methods (on a subset's or a dataset's targets, or all) by state, per method,
    with the measured throughput and the ETA of the unfinished ones (the module docstring's definitions).

    The counts come from the tallies a periodic task keeps (:mod:`comparna.services.tallies`, at most a
    minute old; the result's ``now`` is when they were counted): a page never counts the predictions table
    (issue 28). With ``live``, another window or ``now``, or before the first count, they are counted here.

    Returns ``{"total", "finished", "pending", "by_status", "recent", "window_minutes", "measured_minutes",
    "rate_per_min", "workers_left", "eta", "unestimated", "eta_sentence", "methods": [{"method", "pk",
    "total", "finished", "pending", "queued", "ok", "failed", "recent", "rate_per_min", "eta"}], "now"}``;
    ``eta`` is ``{"minutes", "text", "at", "method", "dataset"}`` (the slowest method and its dataset) or
    None (no method with queued work finished anything in the window).
    """
    if subset is not None:
        dataset = subset.dataset
    counted = None
    if not live and now is None and window_minutes == WINDOW_MINUTES:
        counted = tallies.progress_counts_by_dataset(
            subset=subset, dataset=dataset, include_private=include_private
        )
    if counted is not None:
        scope, run = counted
        rates = scope
        if subset is not None:  # the rates are the dataset's
            rates = tallies.progress_counts_by_dataset(dataset=dataset, include_private=include_private)[0]
        first = tallies.first_started_in_window(run)
        etas = None if include_private else tallies.scheduled_etas(run, subset=subset, dataset=dataset)
        return _progress(scope, rates, first=first, window_minutes=window_minutes, now=run.computed_at,
                         etas=etas, throughput=run.throughput)
    now = now or timezone.now()
    # what the workers run: development methods' predictions too (the owner's page), else what counts publicly
    base = Prediction.objects.exclude(self_reported=True) if include_private else Prediction.objects.public()
    if dataset is not None:
        base = base.filter(target__dataset=dataset)
    counts_qs = base.filter(target__subsets=subset) if subset is not None else base
    scope: dict[int, tuple[dict, dict]] = {}
    for ds, name, pk, status, n in (
        counts_qs.values_list(
            "target__dataset_id", "method_version__method__name", "method_version__method_id", "status"
        )
        .annotate(n=Count("id"))
        .order_by()
    ):
        scope.setdefault(ds, ({}, {}))[0].setdefault((name, pk), {})[status] = n
    since = now - dt.timedelta(minutes=window_minutes)
    # "too long" is recorded without running the program (often at queue time): not throughput
    ran = Q(finished_at__gte=since, finished_at__lte=now) & ~Q(
        status__in=(*UNFINISHED, Prediction.Status.TOO_LONG)
    )
    rates: dict[int, tuple[dict, dict]] = {}
    for row in (
        base.filter(ran).values("target__dataset_id", "method_version__method_id")
        .annotate(n=Count("id"), first=Min("started_at")).order_by()
    ):
        rates.setdefault(row["target__dataset_id"], ({}, {}))[1][row["method_version__method_id"]] = (
            row["n"], row["first"]
        )
    # the workers' first start in the window, whatever they ran (one measuring time for every rate)
    first = Prediction.objects.exclude(self_reported=True).filter(ran).aggregate(first=Min("started_at"))
    first = first["first"]
    etas, throughput = None, None
    if not include_private:  # public figures: the schedule's ETA (comparna.services.backlog)
        span = measuring_minutes(first, now=now, window_minutes=window_minutes)
        schedule = backlog.measure_schedule(now=now, since=since, span_minutes=span)
        scoped = backlog.scope_etas(schedule, subset=subset, dataset=None if subset else dataset)
        etas = backlog.pick(scoped, subset=subset, dataset=dataset)
        throughput = schedule.throughput
    return _progress(scope, rates, first=first, window_minutes=window_minutes, now=now, etas=etas,
                     throughput=throughput)


def _progress(
    scope: dict[int, tuple[dict, dict]],
    rates: dict[int, tuple[dict, dict]],
    *,
    first: dt.datetime | None,
    window_minutes: float,
    now: dt.datetime,
    etas: list[dict] | None = None,
    throughput: float | None = None,
) -> dict:
    """:func:`prediction_progress`'s result from its counts per dataset: ``scope`` {dataset pk: (by_method
    {(name, method pk): {status: n}}, _)} of what is shown, ``rates`` {dataset pk: (_, recent {method pk:
    (finished in the window, first of them started)})} of the datasets the rates are measured on; ``etas``
    the scope's schedule ETAs (:func:`comparna.services.backlog.pick`; public figures), else (an owner's
    view) each method's ETA is its queue at its own rate."""
    span = measuring_minutes(first, now=now, window_minutes=window_minutes)
    # what the workers still have to run: queued or running predictions of active methods (a deactivated
    # method's predictions wait; an upload a web service owes is not the workers' work)
    active = set(Method.objects.filter(active=True).values_list("pk", flat=True))
    merged: dict[tuple[str, int], dict] = {}
    by_status: dict[str, int] = defaultdict(int)
    slowest = None  # (minutes, method, dataset pk)
    unestimated: set[str] = set()
    workers_left = 0
    for ds, (by_method, _) in scope.items():
        recent = rates.get(ds, ({}, {}))[1]
        for (name, pk), counts in by_method.items():
            m = merged.setdefault(
                (name, pk), {"method": name, "pk": pk, "statuses": defaultdict(int), "recent": 0,
                             "queued": 0, "eta": None, "unestimated": False}
            )
            for status, n in counts.items():
                m["statuses"][status] += n
                by_status[status] += n
            n_recent = recent.get(pk, (0, None))[0]
            m["recent"] += n_recent
            if pk not in active:
                continue
            queued = sum(counts.get(st, 0) for st in WORKER_QUEUE)
            m["queued"] += queued
            workers_left += queued
            if not queued:
                continue
            if not n_recent:
                m["unestimated"] = True
                unestimated.add(name)
                continue
            minutes = queued / (n_recent / span)
            if m["eta"] is None or minutes > m["eta"][0]:
                m["eta"] = (minutes, ds)
            if slowest is None or minutes > slowest[0]:
                slowest = (minutes, name, ds)
    scheduled = None if etas is None else _scheduled(etas, now=now)
    measuring = scheduled is not None and span < MIN_MEASURING_MINUTES
    if measuring:  # too short a measurement to say when (make run's first minutes: 3x too long)
        scheduled = ({}, None, set())
    methods = []
    for (name, pk), m in sorted(merged.items(), key=lambda kv: kv[0][0].lower()):
        counts = m["statuses"]
        total = sum(counts.values())
        pending = sum(counts.get(s, 0) for s in UNFINISHED)
        if pk not in active:
            eta = None
        elif not m["queued"]:
            eta = _eta(0, None, now)
        elif scheduled is not None:
            eta = scheduled[0].get(pk)
        elif m["eta"] is None or m["unestimated"]:
            eta = None  # some of its queue is on a dataset where it finished nothing in the window
        else:
            eta = _eta_at(m["eta"][0], now)
        methods.append(
            {
                "method": name,
                "pk": pk,
                "total": total,
                "finished": total - pending,
                "pending": pending,
                "queued": m["queued"],
                "ok": counts.get(Prediction.Status.OK, 0),
                "failed": total - pending - counts.get(Prediction.Status.OK, 0),
                "recent": m["recent"],
                "rate_per_min": m["recent"] / span if m["recent"] else None,
                "eta": eta,
            }
        )
    total = sum(by_status.values())
    pending = sum(by_status.get(s, 0) for s in UNFINISHED)
    n_recent = sum(m["recent"] for m in methods)
    if not workers_left:
        eta = _eta(0, None, now)
    elif scheduled is not None:
        eta, unestimated = scheduled[1], scheduled[2]
    elif slowest is None:
        eta = None
    else:
        dataset_names = dict(Dataset.objects.filter(pk=slowest[2]).values_list("pk", "name"))
        eta = {**_eta_at(slowest[0], now), "method": slowest[1], "dataset": dataset_names.get(slowest[2], "")}
    out = {
        "total": total,
        "finished": total - pending,
        "pending": pending,
        "percent": 100.0 * (total - pending) / total if total else 100.0,
        "by_status": dict(by_status),
        "recent": n_recent,
        "window_minutes": window_minutes,
        "measured_minutes": span,
        "rate_per_min": n_recent / span if n_recent else None,
        "workers_left": workers_left,
        "throughput": throughput,
        "scheduled": scheduled is not None,
        "measuring": measuring,
        "eta": eta,
        "unestimated": sorted(unestimated, key=str.lower),
        "methods": methods,
        "now": now,
    }
    out["eta_sentence"] = eta_sentence(out)
    return out


def _scheduled(etas: list[dict], *, now: dt.datetime) -> tuple[dict[int, dict | None], dict | None, set[str]]:
    """From a scope's schedule ETAs (:func:`comparna.services.backlog.pick`): each method's ETA {method pk:
    eta or None} (its versions' latest; ``lower_bound`` when work before it is uncounted), the scope's ETA
    (with the ``dataset`` its last prediction is on) and the names of the methods whose work is uncounted."""
    wanted = {v for e in etas for v in (e["version"], *e["unmeasured"]) if v is not None}
    versions = {pk: (mpk, name) for pk, mpk, name in MethodVersion.objects.filter(pk__in=wanted)
                .values_list("pk", "method_id", "method__name")}

    def eta_of(row: dict) -> dict | None:
        if row["minutes"] is None:
            return None
        return {**_eta_at(row["minutes"], now), "lower_bound": bool(row["unmeasured"])}

    methods: dict[int, dict | None] = {}
    scope_eta, unmeasured = None, set()
    for row in etas:
        if row["version"] is None:
            scope_eta = eta_of(row)
            if scope_eta is not None:
                names = dict(Dataset.objects.filter(pk=row["dataset"]).values_list("pk", "name"))
                scope_eta.update(method=None, dataset=names.get(row["dataset"], ""))
            unmeasured = {versions[v][1] for v in row["unmeasured"] if v in versions}
            continue
        mpk = versions.get(row["version"], (None, ""))[0]
        # a method whose own work cannot be costed yet has no estimate of its own (not "at least" a guess)
        mine = None if row["version"] in row["unmeasured"] else eta_of(row)
        got = methods.get(mpk, False)
        if got is False or (got is not None and (mine is None or mine["minutes"] > got["minutes"])):
            methods[mpk] = mine
    return methods, scope_eta, unmeasured


def _eta_at(minutes: float, now: dt.datetime) -> dict:
    return {"minutes": minutes, "text": eta_text(minutes), "at": now + dt.timedelta(minutes=minutes)}


def eta_sentence(progress: dict) -> str:
    """The one sentence every page gives of a progress's ETA (empty when nothing is left to run)."""
    if not progress.get("workers_left"):
        return ""
    window = f"{progress['window_minutes']:.0f} min"
    missing = progress.get("unestimated") or []
    eta = progress.get("eta")
    scheduled = progress.get("scheduled")
    if not eta:
        if progress.get("measuring"):
            return (f"ETA: measuring — the workers have run for {progress['measured_minutes']:.0f} min; an "
                    f"estimate needs {MIN_MEASURING_MINUTES} min of their runs.")
        if scheduled:
            return (f"ETA: no estimate — no public prediction finished in the last {window} "
                    "(are the workers running?).")
        return (f"ETA: no estimate — no method with queued predictions here finished one in the last "
                f"{window} (are the workers running?).")
    at = eta["at"]
    at_text = at.strftime("%Y-%m-%d %H:%M") if hasattr(at, "strftime") else str(at)[:16].replace("T", " ")
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    whose = "theirs" if len(missing) > 1 else "its"
    if scheduled:
        where = f", on {eta['dataset']}" if eta.get("dataset") else ""
        text = (
            f"ETA: {'at least' if eta.get('lower_bound') else 'about'} {eta['text']} (≈ {at_text} UTC), "
            f"when the workers reach the last prediction queued here{where}: every public prediction queued "
            f"before it, of any method or dataset, at each method's seconds per prediction (scaled by target "
            f"length) and the workers' throughput, both measured over the last {window}."
        )
        if missing:
            text += f" Not counted yet: the work of {shown} (nothing of {whose} finished in that window)."
        return text
    slowest = f", {eta['method']}," if eta.get("method") else ""
    where = f" on {eta['dataset']}" if eta.get("dataset") else ""
    text = (
        f"ETA: about {eta['text']} (≈ {at_text} UTC), when the slowest method here{slowest} "
        f"finishes its queue at its own rate{where} over the last {window}."
    )
    if missing:
        text += f" No estimate yet for {shown}: nothing of {whose} finished in that window."
    return text


def unfinished_of_active(*, subset: Subset, live: bool = False) -> int:
    """Queued, running or awaiting predictions of active public methods' current versions on ``subset``
    (tallied in the background unless ``live``; counted here before the first count)."""
    tallied = None if live else tallies.unfinished_of_active(subset=subset)
    if tallied is not None:
        return tallied
    return Prediction.objects.public().filter(
        Q(method_version__is_current=True) & Q(method_version__method__active=True),
        target__subsets=subset,
        status__in=UNFINISHED,
    ).count()


def ranking_state(snapshot: RankingSnapshot, *, live: bool = False) -> dict:
    """``{"settled": bool, "label": "settled" | "provisional", "reasons": [...], "pending": n,
    "inputs_current": bool | None}`` of a snapshot (:data:`SETTLED_DEFINITION`). Pending predictions and
    whether the inputs are still current come from the background counts and checks
    (:mod:`comparna.services.tallies`) unless ``live``; ``inputs_current`` is None when not checked (a newer
    snapshot exists, or predictions are unfinished)."""
    pending = unfinished_of_active(subset=snapshot.subset, live=live)
    newest = is_newest(snapshot)
    current = None
    if newest and not pending:
        current = None if live else tallies.inputs_current(snapshot)
        if current is None:  # before the first background check: compared here
            _, identity = build_counts_table(subset=snapshot.subset, definition=snapshot.definition)
            current = inputs_hash(identity, snapshot.seed) == snapshot.inputs_hash
    return state_of(pending=pending, newest=newest, inputs_current=current)


def is_newest(snapshot: RankingSnapshot) -> bool:
    """Whether no newer snapshot of the snapshot's subset × definition exists."""
    newest = (
        RankingSnapshot.objects.filter(subset=snapshot.subset_id, definition=snapshot.definition)
        .values_list("pk", flat=True)
        .first()
    )
    return newest == snapshot.pk


def state_of(*, pending: int, newest: bool, inputs_current: bool | None) -> dict:
    """:func:`ranking_state` from its facts: ``pending`` unfinished predictions of active methods, whether
    the snapshot is the ``newest`` of its ranking, and (for the newest without pending predictions) whether
    its inputs are the current ones (what the background stores in ``tallies.models.RankingStatus``)."""
    reasons = []
    if pending:
        reasons.append(pending_reason(pending))
    if not newest:
        reasons.append("a newer snapshot of this ranking exists")
        inputs_current = None
    elif not pending and not inputs_current:
        reasons.append(
            "scores changed since this snapshot was computed (the next recomputation updates it)"
        )
    settled = not reasons
    return {
        "settled": settled,
        "label": "settled" if settled else "provisional",
        "reasons": reasons,
        "pending": pending,
        "inputs_current": inputs_current if newest and not pending else None,
        "definition": SETTLED_DEFINITION,
    }


def pending_reason(pending: int) -> str:
    """The reason a ranking (or an archive taken from it) is provisional while predictions are unfinished:
    the same words on every page, feed and archive (issue 37)."""
    return f"{pending} prediction{'s' if pending != 1 else ''} of active methods still unfinished"


def archive_state(contents: dict | None) -> dict | None:
    """A dataset snapshot's state from its archive's ``contents``: provisional when it was taken while
    predictions of active public methods were unfinished (the ranking pages' reason, counted when it was
    taken), else settled; None for an archive that did not record it."""
    pending = (contents or {}).get("unfinished_predictions")
    if pending is None:
        return None
    reasons = [f"{pending_reason(pending)} when it was taken"] if pending else []
    return {
        "settled": not reasons,
        "label": "provisional" if reasons else "settled",
        "reasons": reasons,
        "pending": pending,
        "definition": SETTLED_DEFINITION,
    }
