"""The method page: rank history, mean MCC with CIs by dataset, length and family, the precision-recall curve
of its base-pair probabilities, and its failed runs."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from collections import defaultdict

from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef, Q, Sum
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Score, Subset
from comparna.rna.canonical import structure_from_text
from comparna.rna.prcurve import PRECISION_CONVENTION, pool, pr_curve, pr_input, pr_point
from comparna.services.pages.common import (
    FAILED_STATES,
    LENGTH_BINS,
    ci_dict,
    current_scores,
    length_bin,
)
from comparna.services.pages.figures import PrLine, method_rank_figure, pr_curve_figure
from comparna.services.tallies import SERVICE_UPLOAD, version_tallies
from comparna.tallies.models import MethodStanding, MethodSummary
from predictors.models import Method, Prediction


def store_method_standings() -> int:
    """Store every method's row of each ranking snapshot that has none yet (a periodic task's work: it reads
    the snapshots' whole reports once), so a method's page reads only its own rows; returns how many
    snapshots were processed."""
    from comparna.services.pages.rankings import snapshot_view
    from comparna.services.ranking_scope import is_ranked

    missing = RankingSnapshot.objects.filter(
        ~Exists(MethodStanding.objects.filter(snapshot=OuterRef("pk")))
    ).order_by("pk")
    done = 0
    # one snapshot (and its report) at a time, no statement left open across the writes below (SQLite)
    for pk in list(missing.values_list("pk", flat=True)):
        snap = RankingSnapshot.objects.filter(pk=pk).first()
        if snap is None:
            continue
        view, shown = snapshot_view(snap)
        rows = view.get("methods", [])
        of = sum(1 for r in rows if is_ranked(r))
        raw = {r["method"]: r.get("rank") for r in snap.report.get("methods", [])}
        standings = {
            r["method"]: MethodStanding(
                snapshot=snap, method=r["method"], protocol=shown, ranked=is_ranked(r), of=of,
                report_rank=raw.get(r["method"]), row=_small_row(r),
            )
            for r in rows
        }
        for name, rank in raw.items():  # in the report, not in the view: its rank history only
            standings.setdefault(name, MethodStanding(
                snapshot=snap, method=name, protocol=shown, ranked=False, of=of, report_rank=rank, row={},
            ))
        MethodStanding.objects.bulk_create(standings.values(), ignore_conflicts=True)
        done += 1
    return done


STANDING_KEYS = ("rank", "rank_low", "rank_high", "decided_mcc", "mcc", "decided_targets", "targets")


def _small_row(row: dict) -> dict:
    return {k: row.get(k) for k in STANDING_KEYS}


def method_rank_history(method: Method) -> str | None:
    """Plotly JSON: the method's rank over time in every subset × definition it was ranked in (from its
    stored standings, :func:`store_method_standings`; before the first store, from every report)."""
    lines = defaultdict(list)
    if MethodStanding.objects.exists():
        for at, subset_name, ds_name, definition, rank in (
            MethodStanding.objects.filter(method=method.name, report_rank__isnull=False)
            .order_by("snapshot__computed_at", "snapshot_id")
            .values_list("snapshot__computed_at", "snapshot__subset__name", "snapshot__dataset__name",
                         "snapshot__definition", "report_rank")
        ):
            lines[f"{ds_name} · {subset_name} ({definition})"].append((at.isoformat(), rank))
        return method_rank_figure(lines) if lines else None
    for at, subset_name, ds_name, definition, report in RankingSnapshot.objects.order_by(
        "computed_at", "pk"
    ).values_list("computed_at", "subset__name", "dataset__name", "definition", "report"):
        for r in report.get("methods", []):
            if r["method"] == method.name:
                lines[f"{ds_name} · {subset_name} ({definition})"].append((at.isoformat(), r["rank"]))
    return method_rank_figure(lines) if lines else None


def method_performance(method: Method) -> list[dict]:
    """Per dataset and definition: mean MCC with 95 % CI overall, per length bin and per RNA family."""
    out = []
    for dataset in Dataset.objects.order_by("slug"):
        for definition in dataset.definitions:
            scores = current_scores(definition=definition, dataset=dataset, methods=[method.name])
            if not scores:
                continue
            by_len: dict[str, list[float]] = defaultdict(list)
            by_fam: dict[str, list[float]] = defaultdict(list)
            for s in scores:
                by_len[length_bin(s.length)].append(s.mcc)
                by_fam[s.rna_class].append(s.mcc)
            out.append(
                {
                    "dataset": dataset,
                    "definition": definition,
                    "overall": ci_dict([s.mcc for s in scores], seed=0),
                    "by_length": [
                        {"group": lab, **ci_dict(by_len[lab], seed=0)}
                        for _, _, lab in LENGTH_BINS
                        if by_len.get(lab)
                    ],
                    "by_family": [
                        {"group": g, **ci_dict(v, seed=0)}
                        for g, v in sorted(by_fam.items(), key=lambda kv: (-len(kv[1]), kv[0]))
                    ],
                }
            )
    return out


def summary_stamp(method: Method) -> str:
    """What a method's stored figures depend on: its current version, its scores (how many, the newest, the
    sum of their MCCs: a re-scoring changes it), its finished predictions and the datasets' versions."""
    version = method.current_version
    scores = Score.objects.filter(prediction__method_version=version).aggregate(
        n=Count("id"), top=Max("id"), total=Sum("mcc")
    ) if version else {}
    preds = version.predictions.aggregate(
        n=Count("id", filter=Q(status=Prediction.Status.OK)), last=Max("finished_at")
    ) if version else {}
    blob = json.dumps(
        [version.pk if version else None, method.active, method.visibility, scores, preds,
         sorted(Dataset.objects.values_list("pk", "version"))],
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def compute_method_summary(method: Method) -> dict:
    """The method page's figures from the method's scores (:func:`method_performance`,
    :func:`method_pr_curve`), as the stored JSON gives them back (datasets by name and slug)."""
    performance = [
        {**p, "dataset": {"name": p["dataset"].name, "slug": p["dataset"].slug}}
        for p in method_performance(method)
    ]
    data = {"performance": performance, "pr": method_pr_curve(method)}
    # PostgreSQL's jsonb has no NaN
    return json.loads(json.dumps(data), parse_constant=lambda _: None)


def refresh_method_summaries(methods=None, *, budget_s: float | None = None) -> int:
    """Store the method page's figures of every public method (or of ``methods``) whose scores changed since
    they were last computed (a background task's work: it reads the method's scores and bootstraps their
    CIs; about 10 s per method at 20 000 targets); returns how many were computed.

    Methods never computed come first, then the longest computed ago; with ``budget_s`` the run stops after
    that many seconds and the next run goes on where it stopped."""
    started_run = time.perf_counter()
    done = 0
    qs = Method.objects.public() if methods is None else methods
    computed = dict(MethodSummary.objects.values_list("method_id", "computed_at"))
    never = timezone.now() - dt.timedelta(days=365 * 100)
    for method in sorted(qs.order_by("pk"), key=lambda m: (computed.get(m.pk, never), m.pk)):
        if budget_s is not None and done and time.perf_counter() - started_run > budget_s:
            break  # at least one method per run
        stamp = summary_stamp(method)
        if MethodSummary.objects.filter(method=method, stamp=stamp).exists():
            continue
        started = time.perf_counter()
        data = compute_method_summary(method)
        MethodSummary.objects.update_or_create(
            method=method,
            defaults={"stamp": stamp, "data": data, "computed_at": timezone.now(),
                      "seconds": time.perf_counter() - started},
        )
        done += 1
    return done


def method_summary(method: Method) -> MethodSummary | None:
    """The method page's stored figures, or None before their first computation (the page says so)."""
    return MethodSummary.objects.filter(method=method).first()


def method_pr_curve(method: Method) -> dict | None:
    """Pooled precision-recall curve of the current version's base-pair probabilities, with the binary
    prediction's single point, per dataset and definition that has probabilities (SCIENCE.md §7)."""
    version = method.current_version
    if version is None:
        return None
    preds = list(
        version.predictions.public()
        .filter(status=Prediction.Status.OK, probabilities__isnull=False)
        .select_related("target__dataset")
        .prefetch_related("target__references", "scores")
    )
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for p in preds:
        if not p.probabilities:
            continue
        for ref in p.target.references.all():
            groups[(p.target.dataset.name, ref.definition)].append((p, ref))
    if not groups:
        return None
    lines, curves = [], []
    for (ds_name, definition), items in sorted(groups.items()):
        inputs, tp, fn, fp = [], 0, 0, 0
        for p, ref in items:
            reference = structure_from_text(p.target.length, ref.pairs)
            probs = {(int(i), int(j)): float(x) for i, j, x in p.probabilities}
            inputs.append(pr_input(reference, probs))
            for s in p.scores.all():
                if s.definition == definition:
                    tp, fn, fp = tp + s.tp, fn + s.fn, fp + s.fp
        pooled = pool(inputs)
        if pooled.positives == 0:
            continue
        curve = pr_curve(pooled)
        label = f"{ds_name} ({definition})"
        point = pr_point(tp, fn, fp)
        lines.append(PrLine(label, curve.recall.tolist(), curve.precision.tolist(), curve.auc, point))
        curves.append(
            {
                "label": label,
                "auc": curve.auc,
                "baseline": curve.baseline,
                "targets": len(items),
                "point": point,
                "interpolation": curve.interpolation,
            }
        )
    if not curves:
        return None
    return {"figure": pr_curve_figure(lines), "curves": curves, "precision_convention": PRECISION_CONVENTION}


#: The failed runs a method's page lists (the newest); all of them: its predictions list, by state.
FAILURE_ROWS = 20


def _failures(method: Method):
    """The method's public failed runs of its approved versions (:meth:`PredictionQuerySet.public`)."""
    return Prediction.objects.public().filter(method_version__method=method, status__in=FAILED_STATES)


def method_failures(method: Method, *, limit: int = FAILURE_ROWS) -> list[Prediction]:
    """The method's newest ``limit`` failed runs (all versions but one awaiting staff approval): their ids
    are picked from its predictions alone, then only those rows are joined to their targets."""
    newest = list(_failures(method).order_by("-finished_at", "-pk").values_list("pk", flat=True)[:limit])
    return list(
        Prediction.objects.filter(pk__in=newest).select_related("target", "method_version")
        # not the structures, sequences or specs
        .only("target__source_id", "target__length", "method_version__version", "status", "runtime_s",
              "error", "finished_at")
        .order_by("-finished_at", "-pk")
    )


def method_counts(method: Method) -> dict:
    """What the method page counts of its predictions: ``{"predictions": {state: n}`` (the current version's
    public ones), ``"failures": {state: n}`` (:func:`method_failures`' runs), ``"origins"``
    (:func:`prediction_origins`), ``"counted_at"}``: read from the tallies the background refresh counts
    every minute (a few rows per version, :func:`comparna.services.tallies.version_tallies`), at
    ``counted_at``; before the first refresh counted here (``counted_at`` None)."""
    version = method.current_version
    shown = set(method.versions.public().values_list("pk", flat=True))  # approved versions only
    tallied = version_tallies(versions=[*shown, *([version.pk] if version else [])])
    if tallied is None:
        return {"predictions": prediction_counts(method), "origins": prediction_origins(method),
                "failures": dict(_failures(method).values_list("status").annotate(n=Count("id")).order_by()),
                "counted_at": None}
    rows, run = tallied
    current, failures = defaultdict(int), defaultdict(int)
    origins = dict.fromkeys(ORIGINS, 0)
    kind = (version.spec.get("kind") or "command") if version else "command"
    for pk, status, self_reported, n, blind in rows:
        if pk in shown and status in FAILED_STATES and not self_reported:
            failures[status] += n
        if version is None or pk != version.pk:
            continue
        if not self_reported:
            current[status] += n
        if status == Prediction.Status.OK:  # as origin_of says of each prediction
            if self_reported:
                origins["self_reported"] += n
            else:
                origins["blind"] += blind
                origins["service" if kind == "web" else "computed"] += n - blind
    return {
        "predictions": {s.value: current[s] for s in PREDICTION_STATES if current.get(s)},
        "failures": {s.value: failures[s] for s in FAILED_STATES if failures.get(s)},
        "origins": [{"origin": k, "label": ORIGINS[k], "n": n} for k, n in origins.items() if n],
        "counted_at": run.computed_at,
    }


def method_rankings(method: Method) -> list[dict]:
    """Where the method stands now: its row in the newest ranking of every subset × definition it is in —
    the same rank, rank interval and MCC on the same n targets as that snapshot's ranking page (the
    target-level view, :func:`comparna.services.pages.rankings.snapshot_view`), and whether the snapshot is
    settled or provisional."""
    from comparna.services.pages.ranking_status import snapshot_states
    from comparna.services.pages.rankings import snapshot_view
    from comparna.services.ranking_scope import is_ranked

    out = []
    subsets = list(Subset.objects.select_related("dataset").order_by("dataset__name", "order", "slug"))
    # the newest snapshot of every subset × definition, its standings: one query each, not one per ranking
    newest = RankingSnapshot.objects.filter(subset__in=subsets).order_by(
        "subset_id", "definition", "-computed_at", "-pk")
    if connection.features.can_distinct_on_fields:
        newest = newest.distinct("subset_id", "definition")
    newest_pk: dict[tuple[int, str], int] = {}
    for pk, subset_id, definition in newest.values_list("pk", "subset_id", "definition"):
        newest_pk.setdefault((subset_id, definition), pk)
    snapshots = RankingSnapshot.objects.filter(pk__in=newest_pk.values()).select_related(
        "subset", "dataset").defer("report", "inputs").in_bulk()  # its standings are stored
    standings = MethodStanding.objects.filter(snapshot__in=snapshots)
    with_standings = set(standings.values_list("snapshot_id", flat=True).distinct())
    mine_of = {x[0]: x[1:] for x in standings.filter(method=method.name).values_list(
        "snapshot_id", "method", "protocol", "ranked", "of", "row")}
    for subset in subsets:
        for definition in subset.definitions():
            snap = snapshots.get(newest_pk.get((subset.pk, definition)))
            if snap is None:
                continue
            if snap.pk in with_standings:
                mine = mine_of.get(snap.pk)
                if mine is None or not mine[4]:
                    continue
                _, shown, ranked, of, row = mine
            else:  # a snapshot stored since the last background run
                view, shown = snapshot_view(snap)
                rows = view.get("methods", [])
                row = next((r for r in rows if r.get("method") == method.name), None)
                if row is None:
                    continue
                ranked = is_ranked(row)
                of = sum(1 for r in rows if is_ranked(r))
            out.append(
                {
                    "dataset": subset.dataset,
                    "subset": subset,
                    "definition": definition,
                    "snapshot": snap.pk,
                    "protocol": shown,
                    "rank": row.get("rank") if ranked else None,
                    "rank_low": row.get("rank_low") if ranked else None,
                    "rank_high": row.get("rank_high") if ranked else None,
                    "of": of,
                    # the ranking's own figure: mean per-target MCC on the targets that decided its place
                    "mcc": row.get("decided_mcc") if shown == "target" else row.get("mcc"),
                    "targets": row.get("decided_targets") if shown == "target" else row.get("targets"),
                    "computed_at": snap.computed_at,
                }
            )
    # the state of every ranking it is in: the stored live states' columns, read at once
    states = snapshot_states([snapshots[r["snapshot"]] for r in out])
    for r in out:
        r.update(settled=states[r["snapshot"]]["settled"], state=states[r["snapshot"]]["label"])
    return out


PREDICTION_STATES = tuple(Prediction.Status)


def method_predictions(method: Method, *, status: str = ""):
    """The current version's public predictions (all states, or one), by target, with their scores
    prefetched (self-reported uploads are not among them)."""
    version = method.current_version
    if version is None:
        return Prediction.objects.none()
    qs = version.predictions.public().select_related("target__dataset").prefetch_related("scores")
    if status:
        qs = qs.filter(status=status)
    return qs.order_by("target__dataset__name", "target__source_id")


def prediction_counts(method: Method) -> dict[str, int]:
    """Public predictions of the current version by state (the filter's counts)."""
    version = method.current_version
    if version is None:
        return {}
    return dict(version.predictions.public().values_list("status").annotate(n=Count("id")).order_by())


#: Where a finished structure came from, as the method page says it (issue 26).
ORIGINS = {
    "computed": "run by CompaRNA",
    "service": "answered by the method's web service to a job CompaRNA sent",
    "blind": "uploaded by its owner before the target's reference existed (blind)",
    "self_reported": "uploaded by its owner for a target whose reference was public: self-reported, "
    "not shown, not ranked",
}


def prediction_origins(method: Method) -> list[dict]:
    """How many of the current version's successful predictions were computed by CompaRNA, answered by the
    method's web service, uploaded blind, or self-reported (counted here, never shown or ranked)."""
    version = method.current_version
    if version is None:
        return []
    counts = dict.fromkeys(ORIGINS, 0)
    rows = (
        version.predictions.filter(status=Prediction.Status.OK)
        .values_list("uploaded", "self_reported", "runner")
        .annotate(n=Count("id"))
        .order_by()
    )
    for uploaded, self_reported, runner, n in rows:
        counts[origin_of(uploaded=uploaded, self_reported=self_reported, runner=runner,
                         kind=version.spec.get("kind") or "command")] += n
    return [{"origin": k, "label": ORIGINS[k], "n": n} for k, n in counts.items() if n]


def origin_of(*, uploaded: bool, self_reported: bool, runner: str, kind: str) -> str:
    """The :data:`ORIGINS` key of one prediction."""
    if self_reported:
        return "self_reported"
    if uploaded and runner != SERVICE_UPLOAD:
        return "blind"
    return "service" if kind == "web" else "computed"
