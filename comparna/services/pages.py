"""The numbers and pictures behind the web pages: rankings, comparisons, method profiles, target drawings.

Everything that depends only on an immutable :class:`RankingSnapshot` is cached under a key containing the
snapshot's primary key, so it never needs invalidation. Per-target numbers (comparisons, CIs) come from the
stored scores of each method's current version; the engine itself is never re-run here except for the one
pair on a comparison page, with the snapshot's seed, to show the test's p-value.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Score, Subset, Target
from comparna.rna import statistics
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import write_dot_bracket
from comparna.rna.metrics import PairCounts
from comparna.rna.prcurve import pool, pr_curve, pr_input, pr_point
from comparna.rna.ranking import ALPHA, MIN_COMMON, CountsTable, pair_replicate_mccs, wilcoxon_pvalues
from comparna.rna.structure import StructureFormatError
from predictors.models import Method, Prediction

CACHE_PREFIX = "comparna:pages:v1"
#: Length bins of SCIENCE.md §3 (RNA STRAND subsets), also used for the PDB set.
LENGTH_BINS: tuple[tuple[int, int | None, str], ...] = (
    (0, 200, "≤ 200 nt"),
    (201, 800, "201–800 nt"),
    (801, None, "> 800 nt"),
)
COUNT_FIELDS = ("tp", "fn", "fp", "fp_inconsistent", "fp_contradicting", "fp_compatible", "tn")
SCORE_FIELDS = ("mcc", "sensitivity", "ppv", "f1")
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


def length_bin(length: int) -> str:
    for low, high, label in LENGTH_BINS:
        if length >= low and (high is None or length <= high):
            return label
    return LENGTH_BINS[0][2]


def figure_json(fig) -> str:
    """Plotly figure JSON safe to embed in a ``<script type="application/json">`` element."""
    return fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _ci_dict(values: Sequence[float], *, seed: int) -> dict | None:
    if len(values) == 0:
        return None
    ci = statistics.bootstrap_ci_mean(np.asarray(values, dtype=np.float64), seed=seed)
    return {"mean": ci.estimate, "low": ci.low, "high": ci.high, "n": ci.n, "small": ci.small}


# ------------------------------------------------------------------------------------------ per-target data
@dataclass(frozen=True)
class TargetScore:
    """One current-version score row with what the pages group by."""

    method: str
    target_id: int
    source_id: str
    length: int
    rna_class: str
    counts: dict
    mcc: float
    sensitivity: float
    ppv: float
    f1: float


def current_scores(
    *,
    definition: str,
    subset: Subset | None = None,
    dataset: Dataset | None = None,
    methods: Iterable[str] | None = None,
) -> list[TargetScore]:
    """Scores of the current version of active methods under ``definition`` (in a subset or a dataset)."""
    qs = Score.objects.filter(
        definition=definition,
        prediction__method_version__is_current=True,
        prediction__method_version__method__active=True,
    )
    if subset is not None:
        qs = qs.filter(prediction__target__subsets=subset)
    if dataset is not None:
        qs = qs.filter(prediction__target__dataset=dataset)
    if methods is not None:
        qs = qs.filter(prediction__method_version__method__name__in=list(methods))
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
        mcc, sens, ppv, f1 = rest[len(COUNT_FIELDS) :]
        out.append(
            TargetScore(name, tid, sid, length, rna_class or UNASSIGNED_FAMILY, counts, mcc, sens, ppv, f1)
        )
    return out


# ---------------------------------------------------------------------------------------------- rankings
def method_directory() -> dict[str, dict]:
    """Method name -> {pk, input_kind, comparative} for linking and filtering (all methods, one query)."""
    return {
        name: {"pk": pk, "input_kind": kind, "comparative": kind != Method.InputKind.SINGLE}
        for name, pk, kind in Method.objects.values_list("name", "pk", "input_kind")
    }


def ranking_rows(snapshot: RankingSnapshot) -> list[dict]:
    """The snapshot's rows with method links, input kind and the mean per-target MCC with a 95 % CI.

    Cached for ever under the snapshot's pk: the report is immutable, and the CI uses the scores present when
    first shown (normally the ones the snapshot was computed from).
    """

    def compute() -> list[dict]:
        directory = method_directory()
        names = [row["method"] for row in snapshot.report.get("methods", [])]
        per_method: dict[str, list[float]] = defaultdict(list)
        for s in current_scores(definition=snapshot.definition, subset=snapshot.subset, methods=names):
            per_method[s.method].append(s.mcc)
        rows = []
        for row in snapshot.report.get("methods", []):
            info = directory.get(row["method"], {"pk": None, "input_kind": "single", "comparative": False})
            rows.append(
                {**row, **info, "mean_mcc": _ci_dict(per_method.get(row["method"], []), seed=snapshot.seed)}
            )
        return rows

    return cached(f"ranking-rows:{snapshot.pk}", compute)


SORT_KEYS = {
    "rank": lambda r: r["rank"],
    "method": lambda r: r["method"].lower(),
    "wins": lambda r: r["wins"],
    "losses": lambda r: r["losses"],
    "draws": lambda r: r["draws"],
    "unknown": lambda r: r["unknown"],
    "mcc": lambda r: r["mcc"],
    "sensitivity": lambda r: r.get("sensitivity", 0.0),
    "ppv": lambda r: r.get("ppv", 0.0),
    "mean_mcc": lambda r: r["mean_mcc"]["mean"] if r.get("mean_mcc") else -2.0,
    "targets": lambda r: r["targets"],
}
KIND_FILTERS = ("all", "single", "comparative")


def sort_and_filter(
    rows: list[dict], *, sort: str = "rank", direction: str = "asc", kind: str = "all"
) -> list[dict]:
    """Rows sorted by a column of :data:`SORT_KEYS` and filtered by input kind (server-side, no JS)."""
    key = SORT_KEYS.get(sort, SORT_KEYS["rank"])
    out = sorted(rows, key=lambda r: (key(r), r["method"]), reverse=direction == "desc")
    if kind == "single":
        out = [r for r in out if not r["comparative"]]
    elif kind == "comparative":
        out = [r for r in out if r["comparative"]]
    return out


def snapshot_history(*, subset: Subset, definition: str) -> list[dict]:
    """Every snapshot of a subset × definition, oldest first: ``{"pk", "at", "ranks": {method: rank}}``."""
    out = []
    for pk, at, report in (
        RankingSnapshot.objects.filter(subset=subset, definition=definition)
        .order_by("computed_at", "pk")
        .values_list("pk", "computed_at", "report")
    ):
        out.append({"pk": pk, "at": at, "ranks": {r["method"]: r["rank"] for r in report.get("methods", [])}})
    return out


def rank_history_figure(
    history: list[dict], *, methods: Iterable[str] | None = None, title: str = ""
) -> str | None:
    """Plotly JSON of rank over time, one line per method (rank 1 on top); None without snapshots."""
    import plotly.graph_objects as go

    if not history:
        return None
    names = list(methods) if methods is not None else sorted({m for h in history for m in h["ranks"]})
    fig = go.Figure()
    for name in names:
        xs = [h["at"].isoformat() for h in history if name in h["ranks"]]
        ys = [h["ranks"][name] for h in history if name in h["ranks"]]
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name, line={"shape": "hv"}))
    fig.update_layout(
        title=title or None,
        height=360,
        margin={"l": 50, "r": 20, "t": 40 if title else 20, "b": 40},
        yaxis={"title": "rank", "autorange": "reversed", "dtick": 1},
        xaxis={"title": "snapshot date"},
        template="plotly_white",
        legend={"font": {"size": 11}},
    )
    return figure_json(fig)


def subset_history_figure(snapshot: RankingSnapshot) -> str | None:
    """Rank history of the snapshot's subset up to the newest snapshot (cached per newest snapshot pk)."""
    newest = (
        RankingSnapshot.objects.filter(subset=snapshot.subset_id, definition=snapshot.definition)
        .values_list("pk", flat=True)
        .first()
    )
    return cached(
        f"history:{snapshot.subset_id}:{snapshot.definition}:{newest}",
        lambda: rank_history_figure(snapshot_history(subset=snapshot.subset, definition=snapshot.definition)),
    )


def pairwise_matrix(snapshot: RankingSnapshot) -> dict:
    """The verdict matrix in rank order: above the diagonal the row's verdict against the column, below the
    number of common targets ("Figure 2" of Puton et al. 2013)."""

    def compute() -> dict:
        directory = method_directory()
        names = [r["method"] for r in snapshot.report.get("methods", [])]
        verdicts = snapshot.report.get("verdicts", {})
        common = snapshot.report.get("common_targets", {})
        rows = []
        for i, a in enumerate(names):
            cells = []
            for j, b in enumerate(names):
                if i == j:
                    cells.append({"kind": "self"})
                elif j > i:
                    cells.append(
                        {
                            "kind": "verdict",
                            "value": verdicts.get(a, {}).get(b, "?"),
                            "a": a,
                            "b": b,
                            "a_pk": directory.get(a, {}).get("pk"),
                            "b_pk": directory.get(b, {}).get("pk"),
                        }
                    )
                else:
                    cells.append(
                        {
                            "kind": "common",
                            "value": common.get(a, {}).get(b, 0),
                            "a": a,
                            "b": b,
                            "a_pk": directory.get(a, {}).get("pk"),
                            "b_pk": directory.get(b, {}).get("pk"),
                        }
                    )
            rows.append({"method": a, "pk": directory.get(a, {}).get("pk"), "cells": cells})
        return {"methods": names, "rows": rows}

    return cached(f"matrix:{snapshot.pk}", compute)


# -------------------------------------------------------------------------------------------- comparison
@dataclass
class MethodSide:
    name: str
    pk: int
    counts: PairCounts
    scores: dict
    mean_mcc: dict | None


@dataclass
class Comparison:
    """Everything on the comparison page of two methods in one subset × definition."""

    a: MethodSide
    b: MethodSide
    n_common: int
    rows: list[dict]
    snapshot_verdict: str | None
    test: dict
    paired: dict | None
    by_family: list[dict]
    by_length: list[dict]
    scatter_json: str | None = None
    notes: list[str] = field(default_factory=list)


def pair_test(*, subset: Subset, definition: str, a: str, b: str, seed: int) -> dict:
    """The ranking engine's test for one pair on current scores, with the snapshot's seed.

    Builds the two-method counts table over all the subset's targets in the engine's order (method names
    sorted, targets by source id), so the replicate draws are those the nightly ranking makes for this pair.
    """
    names = sorted([a, b])
    targets = list(subset.targets.order_by("source_id").values_list("source_id", flat=True))
    t_ix = {sid: k for k, sid in enumerate(targets)}
    counts = np.zeros((2, len(targets), 5), dtype=np.int64)
    present = np.zeros((2, len(targets)), dtype=bool)
    for s in current_scores(definition=definition, subset=subset, methods=names):
        m = names.index(s.method)
        k = t_ix[s.source_id]
        counts[m, k] = [
            s.counts["tp"],
            s.counts["fn"],
            s.counts["fp"],
            s.counts["fp_compatible"],
            s.counts["tn"],
        ]
        present[m, k] = True
    table = CountsTable(tuple(names), tuple(targets), counts, present)
    mcc_0, mcc_1, n = pair_replicate_mccs(table, 0, 1, seed)
    out = {
        "n_common": int(n),
        "seed": seed,
        "alpha": ALPHA,
        "min_common": MIN_COMMON,
        "method": "two-sided Wilcoxon signed-rank test on 40 paired MCCs of random 90 % subsamples",
    }
    if n < MIN_COMMON:
        return {**out, "pvalue": None, "verdict": "?", "replicates": []}
    with np.errstate(invalid="ignore"):
        p = float(wilcoxon_pvalues(mcc_0[None, :], mcc_1[None, :])[0])
    diff = float((mcc_0 - mcc_1).mean())
    if not np.isnan(p) and p < ALPHA and diff != 0:
        winner = names[0] if diff > 0 else names[1]
        verdict = "+" if winner == a else "-"
    else:
        verdict = "="
    by_name = {names[0]: mcc_0, names[1]: mcc_1}
    return {
        **out,
        "pvalue": None if np.isnan(p) else p,
        "verdict": verdict,
        "mean_difference": float((by_name[a] - by_name[b]).mean()),
        "replicates_a": by_name[a].tolist(),
        "replicates_b": by_name[b].tolist(),
    }


def compare_methods(*, snapshot: RankingSnapshot, a: Method, b: Method) -> Comparison:
    """Pooled counts, the engine's test, paired statistics and per-family / per-length CIs of two methods."""

    def compute() -> Comparison:
        scores = current_scores(
            definition=snapshot.definition, subset=snapshot.subset, methods=[a.name, b.name]
        )
        by_target: dict[int, dict[str, TargetScore]] = defaultdict(dict)
        for s in scores:
            by_target[s.target_id][s.method] = s
        common = [d for d in by_target.values() if a.name in d and b.name in d]
        common.sort(key=lambda d: d[a.name].source_id)
        seed = snapshot.seed
        sides = []
        for m in (a, b):
            pooled = sum((PairCounts(**d[m.name].counts) for d in common), PairCounts.zero())
            mccs = [d[m.name].mcc for d in common]
            sides.append(
                MethodSide(
                    m.name,
                    m.pk,
                    pooled,
                    {
                        "mcc": pooled.mcc,
                        "sensitivity": pooled.sensitivity,
                        "ppv": pooled.ppv,
                        "f1": pooled.f1,
                    },
                    _ci_dict(mccs, seed=seed),
                )
            )
        rows = [
            {
                "target_id": d[a.name].target_id,
                "source_id": d[a.name].source_id,
                "length": d[a.name].length,
                "rna_class": d[a.name].rna_class,
                "a": d[a.name],
                "b": d[b.name],
            }
            for d in common
        ]
        mcc_a = np.array([r["a"].mcc for r in rows])
        mcc_b = np.array([r["b"].mcc for r in rows])
        paired = None
        notes = []
        if len(rows) >= 3 and np.var(mcc_a - mcc_b) > 0:
            pc = statistics.compare_paired(mcc_a, mcc_b, seed=seed)
            paired = {
                "n": pc.n,
                "t": pc.t_test.statistic,
                "t_pvalue": pc.t_test.pvalue,
                "t_pvalue_text": statistics.format_p_value(pc.t_test.pvalue),
                "mean_difference": pc.bootstrap.interval.estimate,
                "low": pc.bootstrap.interval.low,
                "high": pc.bootstrap.interval.high,
                "bootstrap_pvalue_text": pc.bootstrap.pvalue_text,
                "spearman": pc.spearman,
                "power": pc.power,
                "n_required": pc.n_required,
                "further_needed": pc.further_needed,
                "verdict": pc.verdict,
                "delta": pc.delta,
                "alpha": pc.alpha,
                "sequential": sequential_look(snapshot=snapshot, t_statistic=pc.t_test.statistic),
            }
        else:
            notes.append("Paired statistics need at least 3 common targets with differing per-target MCCs.")
        by_family = _grouped_cis(rows, key=lambda r: r["rna_class"], seed=seed)
        by_length = _grouped_cis(
            rows,
            key=lambda r: length_bin(r["length"]),
            seed=seed,
            order=[label for _, _, label in LENGTH_BINS],
        )
        test = pair_test(
            subset=snapshot.subset, definition=snapshot.definition, a=a.name, b=b.name, seed=seed
        )
        verdict = snapshot.report.get("verdicts", {}).get(a.name, {}).get(b.name)
        comp = Comparison(
            sides[0], sides[1], len(rows), rows, verdict, test, paired, by_family, by_length, notes=notes
        )
        comp.scatter_json = _scatter_figure(comp)
        return comp

    return cached(f"compare:{snapshot.pk}:{a.pk}:{b.pk}", compute, timeout=600)


def _grouped_cis(rows: list[dict], *, key, seed: int, order: list[str] | None = None) -> list[dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    labels = (
        [g for g in order if g in groups] if order else sorted(groups, key=lambda g: (-len(groups[g]), g))
    )
    return [
        {
            "group": g,
            "n": len(groups[g]),
            "a": _ci_dict([r["a"].mcc for r in groups[g]], seed=seed),
            "b": _ci_dict([r["b"].mcc for r in groups[g]], seed=seed),
        }
        for g in labels
    ]


def _scatter_figure(comp: Comparison) -> str | None:
    import plotly.graph_objects as go

    if not comp.rows:
        return None
    fig = go.Figure()
    for side, key, symbol in ((comp.a, "a", "circle"), (comp.b, "b", "diamond")):
        fig.add_trace(
            go.Scatter(
                x=[r[key].sensitivity for r in comp.rows],
                y=[r[key].ppv for r in comp.rows],
                mode="markers",
                name=side.name,
                text=[r["source_id"] for r in comp.rows],
                marker={"symbol": symbol, "opacity": 0.7},
                hovertemplate="%{text}<br>sensitivity %{x:.3f}<br>PPV %{y:.3f}<extra>"
                + html.escape(side.name)
                + "</extra>",
            )
        )
    fig.update_layout(
        height=420,
        template="plotly_white",
        margin={"l": 50, "r": 20, "t": 20, "b": 45},
        xaxis={"title": "sensitivity", "range": [-0.03, 1.03]},
        yaxis={"title": "PPV", "range": [-0.03, 1.03]},
    )
    return figure_json(fig)


def comparison_csv(comp: Comparison) -> str:
    """The per-target data behind a comparison: counts and scores of both methods on every common target."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = [*COUNT_FIELDS, *SCORE_FIELDS]
    w.writerow(["target", "length", "rna_class", *(f"a_{c}" for c in cols), *(f"b_{c}" for c in cols)])
    for r in comp.rows:
        vals = []
        for key in ("a", "b"):
            s = r[key]
            vals += [s.counts[c] for c in COUNT_FIELDS] + [f"{getattr(s, c):.6f}" for c in SCORE_FIELDS]
        w.writerow([r["source_id"], r["length"], r["rna_class"], *vals])
    return buf.getvalue()


# ------------------------------------------------------------------------------------------- method page
def method_rank_history(method: Method) -> str | None:
    """Plotly JSON: the method's rank over time in every subset × definition it was ranked in."""
    import plotly.graph_objects as go

    fig = go.Figure()
    lines = defaultdict(list)
    for at, subset_name, ds_name, definition, report in RankingSnapshot.objects.order_by(
        "computed_at", "pk"
    ).values_list("computed_at", "subset__name", "dataset__name", "definition", "report"):
        for r in report.get("methods", []):
            if r["method"] == method.name:
                lines[f"{ds_name} · {subset_name} ({definition})"].append((at.isoformat(), r["rank"]))
    if not lines:
        return None
    for label, pts in sorted(lines.items()):
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                mode="lines+markers",
                name=label,
                line={"shape": "hv"},
            )
        )
    fig.update_layout(
        height=340,
        template="plotly_white",
        margin={"l": 50, "r": 20, "t": 20, "b": 40},
        yaxis={"title": "rank", "autorange": "reversed", "dtick": 1},
        xaxis={"title": "snapshot date"},
    )
    return figure_json(fig)


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
                    "overall": _ci_dict([s.mcc for s in scores], seed=0),
                    "by_length": [
                        {"group": lab, **_ci_dict(by_len[lab], seed=0)}
                        for _, _, lab in LENGTH_BINS
                        if by_len.get(lab)
                    ],
                    "by_family": [
                        {"group": g, **_ci_dict(v, seed=0)}
                        for g, v in sorted(by_fam.items(), key=lambda kv: (-len(kv[1]), kv[0]))
                    ],
                }
            )
    return out


def method_pr_curve(method: Method) -> dict | None:
    """Pooled precision-recall curve of the current version's base-pair probabilities, with the binary
    prediction's single point, per dataset and definition that has probabilities (SCIENCE.md §7)."""
    import plotly.graph_objects as go

    version = method.current_version
    if version is None:
        return None
    preds = list(
        version.predictions.filter(status=Prediction.Status.OK, probabilities__isnull=False)
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
    fig = go.Figure()
    curves = []
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
        fig.add_trace(
            go.Scatter(
                x=curve.recall.tolist(),
                y=curve.precision.tolist(),
                mode="lines",
                name=f"{label}: AUC-PR {curve.auc:.3f}",
            )
        )
        recall, precision = pr_point(tp, fn, fp)
        fig.add_trace(
            go.Scatter(
                x=[recall],
                y=[precision],
                mode="markers",
                marker={"size": 11, "symbol": "x"},
                name=f"{label}: binary prediction",
            )
        )
        curves.append(
            {
                "label": label,
                "auc": curve.auc,
                "baseline": curve.baseline,
                "targets": len(items),
                "point": (recall, precision),
                "interpolation": curve.interpolation,
            }
        )
    if not curves:
        return None
    fig.update_layout(
        height=400,
        template="plotly_white",
        margin={"l": 50, "r": 20, "t": 20, "b": 45},
        xaxis={"title": "recall (sensitivity)", "range": [0, 1.02]},
        yaxis={"title": "precision", "range": [0, 1.02]},
    )
    return {"figure": figure_json(fig), "curves": curves}


def method_failures(method: Method, *, limit: int = 200) -> tuple[list[Prediction], dict[str, int]]:
    """The method's failed runs (all versions), newest first, and their counts by state."""
    qs = Prediction.objects.filter(method_version__method=method, status__in=FAILED_STATES)
    counts = dict(qs.values_list("status").annotate(n=Count("id")).order_by())
    rows = list(qs.select_related("target", "method_version").order_by("-finished_at", "-pk")[:limit])
    return rows, counts


# ------------------------------------------------------------------------------------------- target page
@dataclass(frozen=True)
class Arc:
    """One arc of an arc diagram: 1-based i < j, a CSS class and a tooltip."""

    i: int
    j: int
    css: str
    title: str = ""


def arc_diagram_svg(
    length: int,
    upper: Sequence[Arc],
    lower: Sequence[Arc] = (),
    *,
    sequence: str | None = None,
    width: int = 900,
    label: str = "",
) -> str:
    """An SVG arc diagram: the backbone as a line, each base pair as an arc above (``upper``) or below it.

    A pure function of its arguments (no JavaScript needed to see it); every text is escaped. Arcs are
    half-ellipses whose height grows with the pair's span, flattened so that the widest arc fits.
    """
    margin = 20
    span_px = width - 2 * margin
    step = span_px / max(length, 1)
    max_span = max([a.j - a.i for a in (*upper, *lower)] or [1])
    max_height = 130.0
    k = min(1.0, max_height / (max_span * step / 2 or 1))
    up_h = max([(a.j - a.i) * step / 2 * k for a in upper] or [0]) + 10
    low_h = max([(a.j - a.i) * step / 2 * k for a in lower] or [0]) + 10 if lower else 0
    show_letters = sequence is not None and step >= 7
    axis_h = 34 if show_letters else 22
    height = int(up_h + axis_h + low_h + 4)
    y0 = up_h + 2

    def x(pos: float) -> float:
        return margin + (pos - 0.5) * step

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="arcs" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="{html.escape(label or "arc diagram")}">',
        f'<line class="backbone" x1="{x(1):.1f}" y1="{y0:.1f}" x2="{x(length):.1f}" y2="{y0:.1f}"/>',
    ]
    for arcs, sweep, y in ((upper, 1, y0), (lower, 0, y0 + (axis_h if lower else 0))):
        for a in sorted(arcs, key=lambda a: a.j - a.i, reverse=True):
            x1, x2 = x(a.i), x(a.j)
            rx = (x2 - x1) / 2
            ry = max(rx * k, 1.0)
            title = f"<title>{html.escape(a.title)}</title>" if a.title else ""
            parts.append(
                f'<path class="{html.escape(a.css)}" d="M{x1:.1f},{y:.1f} A{rx:.1f},{ry:.1f} 0 0,{sweep} '
                f'{x2:.1f},{y:.1f}">{title}</path>'
            )
    if lower:
        parts.append(
            f'<line class="backbone" x1="{x(1):.1f}" y1="{y0 + axis_h:.1f}" x2="{x(length):.1f}" '
            f'y2="{y0 + axis_h:.1f}"/>'
        )
    tick = next(t for t in (10, 20, 50, 100, 200, 500, 1000, 10**9) if span_px / (length / t) >= 35)
    for pos in [1, *range(tick, length + 1, tick)]:
        parts.append(f'<text class="tick" x="{x(pos):.1f}" y="{y0 + axis_h - 4:.1f}">{pos}</text>')
    if show_letters:
        for pos, base in enumerate(sequence, start=1):
            parts.append(f'<text class="base" x="{x(pos):.1f}" y="{y0 + 12:.1f}">{html.escape(base)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def dot_bracket_or_none(length: int, pairs_text: str) -> str | None:
    """Dot-bracket of stored pairs, or None when it cannot be written (multiplets)."""
    try:
        return write_dot_bracket(structure_from_text(length, pairs_text))
    except StructureFormatError:
        return None


def _pair_set(text: str) -> set[tuple[int, int]]:
    out = set()
    for tok in text.split():
        i, _, j = tok.partition("-")
        out.add((int(i), int(j)))
    return out


def target_context(target: Target) -> dict:
    """References (drawn, with standard vs extended pairs) and every prediction drawn and scored."""
    refs = {r.definition: r for r in target.references.all()}
    classes: dict[tuple[int, int], str] = {}
    for r in refs.values():
        for item in r.classes or []:
            classes[(int(item[0]), int(item[1]))] = str(item[2])
    standard = _pair_set(refs["standard"].pairs) if "standard" in refs else None
    references = []
    for definition in ("extended", "standard"):
        r = refs.get(definition)
        if r is None:
            continue
        pairs = _pair_set(r.pairs)
        arcs = []
        for i, j in sorted(pairs):
            kind = "standard" if (standard is None or (i, j) in standard) else "extended"
            lw = classes.get((i, j), "")
            arcs.append(
                Arc(
                    i,
                    j,
                    f"ref {kind}",
                    f"{i}–{j} {target.sequence[i - 1]}-{target.sequence[j - 1]}"
                    f"{' ' + lw if lw else ''} ({kind})",
                )
            )
        references.append(
            {
                "definition": definition,
                "reference": r,
                "dot_bracket": dot_bracket_or_none(target.length, r.pairs),
                "svg": arc_diagram_svg(
                    target.length, arcs, sequence=target.sequence, label=f"{definition} reference"
                ),
                "n_standard": sum(1 for a in arcs if "standard" in a.css.split()),
                "n_non_standard": sum(1 for a in arcs if "extended" in a.css.split()),
            }
        )
    main_def = "extended" if "extended" in refs else next(iter(refs), None)
    main_pairs = _pair_set(refs[main_def].pairs) if main_def else set()
    predictions = []
    for p in (
        target.predictions.select_related("method_version__method")
        .prefetch_related("scores")
        .order_by("method_version__method__name", "-method_version__created_at")
    ):
        scores = {s.definition: s for s in p.scores.all()}
        entry = {
            "prediction": p,
            "method": p.method_version.method,
            "version": p.method_version,
            "scores": [scores[d] for d in ("extended", "standard") if d in scores],
            "svg": None,
            "dot_bracket": None,
        }
        if p.status == Prediction.Status.OK:
            pred_pairs = _pair_set(p.pairs)
            upper = [
                Arc(
                    i,
                    j,
                    "ref " + ("found" if (i, j) in pred_pairs else "missed"),
                    f"reference {i}–{j}" + (" (found)" if (i, j) in pred_pairs else " (missed)"),
                )
                for i, j in sorted(main_pairs)
            ]
            lower = [
                Arc(
                    i,
                    j,
                    "pred " + ("tp" if (i, j) in main_pairs else "fp"),
                    f"predicted {i}–{j}" + (" correct" if (i, j) in main_pairs else " not in the reference"),
                )
                for i, j in sorted(pred_pairs)
            ]
            entry["svg"] = arc_diagram_svg(
                target.length,
                upper,
                lower,
                sequence=target.sequence,
                label=f"{p.method_version.method.name} vs reference",
            )
            entry["dot_bracket"] = dot_bracket_or_none(target.length, p.pairs)
        predictions.append(entry)
    return {"references": references, "predictions": predictions, "main_definition": main_def}


# ------------------------------------------------------------------------------------------ home, datasets
def weekly_changes(*, days: int = 7) -> dict:
    """New targets per dataset and new methods in the last ``days`` days."""
    since = timezone.now() - timedelta(days=days)
    new_targets = list(
        Target.objects.filter(created_at__gte=since)
        .values("dataset__slug", "dataset__name")
        .annotate(n=Count("id"))
        .order_by("dataset__slug")
    )
    new_methods = list(Method.objects.filter(created_at__gte=since).order_by("name"))
    return {"since": since, "targets": new_targets, "methods": new_methods}


def rankings_at_a_glance(*, top: int = 5) -> list[dict]:
    """For each dataset, the newest snapshot of its first subset and definition with its top rows."""
    out = []
    for dataset in Dataset.objects.order_by("slug"):
        subset = dataset.subsets.first()
        if subset is None:
            continue
        for definition in subset.definitions()[:1]:
            snap = subset.rankings.filter(definition=definition).first()
            if snap is not None:
                out.append(
                    {"dataset": dataset, "subset": subset, "snapshot": snap, "rows": ranking_rows(snap)[:top]}
                )
    return out


def dataset_overview() -> list[dict]:
    """Datasets with their subsets, sizes, definitions, newest snapshot per subset, and downloads if any."""
    sizes = dict(Subset.objects.annotate(n=Count("targets")).values_list("pk", "n"))
    out = []
    for dataset in Dataset.objects.annotate(n_targets=Count("targets")).order_by("slug"):
        subsets = []
        for subset in dataset.subsets.all():
            subsets.append(
                {"subset": subset, "size": sizes.get(subset.pk, 0), "definitions": subset.definitions()}
            )
        out.append({"dataset": dataset, "subsets": subsets, "downloads": dataset_downloads(dataset)})
    return out


def dataset_downloads(dataset: Dataset) -> list[dict]:
    """Download links of archived dataset snapshots (issue 8), when that feature and its rows exist."""
    from django.urls import NoReverseMatch, reverse

    related = getattr(dataset, "snapshots", None)
    if related is None or not hasattr(related, "all"):
        return []
    links = []
    try:
        for snap in related.all()[:20]:
            if getattr(snap, "status", "done") != "done":
                continue
            number = getattr(snap, "number", None)
            try:
                url = reverse("snapshots:download", args=[dataset.slug, number])
            except NoReverseMatch:
                continue
            created = getattr(snap, "created_at", None)
            label = f"Snapshot {number}" + (f" ({created:%Y-%m-%d})" if created else "")
            links.append({"label": label, "url": url})
        if links:
            links.append({"label": "All snapshots", "url": reverse("snapshots:list", args=[dataset.slug])})
    except Exception:  # noqa: BLE001 - another feature's table or URLs may not exist yet; the page must render
        return []
    return links


def json_for_script(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def sequential_look(*, snapshot, t_statistic: float) -> dict | None:
    """Group-sequential reading of a paired test on the weekly-growing PDB set (SCIENCE.md §6).

    Each ranking snapshot of the subset with more targets than the one before is a look; the information
    fraction is targets / ``PDB_PLANNED_TARGETS``. Returns None for static datasets (one look, no
    correction needed).
    """
    from django.conf import settings

    if snapshot.dataset.kind != Dataset.Kind.PDB:
        return None
    sizes: list[int] = []
    history = snapshot.subset.rankings.filter(
        definition=snapshot.definition, computed_at__lte=snapshot.computed_at
    )
    for n in history.order_by("computed_at", "pk").values_list("inputs__targets", flat=True):
        if n and (not sizes or n > sizes[-1]):
            sizes.append(int(n))
    if not sizes:
        return None
    planned = max(settings.PDB_PLANNED_TARGETS, sizes[-1])
    boundary = statistics.sequential_boundary([n / planned for n in sizes])
    return {
        "looks": len(sizes),
        "targets": sizes[-1],
        "planned": planned,
        "z": float(boundary.z[-1]),
        "nominal_p": float(boundary.nominal_p[-1]),
        "crossed": boundary.crossed(len(sizes) - 1, t_statistic),
        "method": boundary.describe(),
    }
