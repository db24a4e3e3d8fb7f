"""Ranking tables, the pairwise matrix and the comparison of two methods.

The pages of one immutable snapshot are rendered once and cached under the snapshot's pk (plus the sort and
filter parameters), so a cached request costs one indexed query.
"""

from __future__ import annotations

import hashlib

from django.db.models.fields.json import KeyTransform
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.views import View
from django.views.generic import TemplateView

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.params import ascii_int
from comparna.rna import thresholds
from comparna.rna.ranking_format import describe_decisions
from comparna.services.pages.common import (
    cache_get,
    cache_set,
    cached,
    data_version,
    report_values,
)
from comparna.services.pages.dataset_groups import dataset_group, grouped
from comparna.services.pages.figures import overview_figure
from comparna.services.pages.provenance import with_provenance
from comparna.services.pages.rank_history import subset_history
from comparna.services.pages.ranking_status import newest_snapshots, ranking_live, ranking_lives
from comparna.services.pages.rankings import (
    KIND_FILTERS,
    PROTOCOLS,
    SORT_KEYS,
    newest_snapshot_summaries,
    pairwise_matrix,
    ranked_rows,
    ranking_csv,
    ranking_export,
    ranking_rows,
    ranking_rows_of,
    snapshot_protocol,
    sort_and_filter,
)
from comparna.services.progress import prediction_progress
from comparna.services.summaries import unranked_summary

#: Rows of each subset's table on a dataset's rankings page (an overview of 20-odd subsets: at 100 methods
#: their 2 000 rows took a second to render); the subset's own page shows them all.
OVERVIEW_ROWS = 15
#: How long "which snapshot is the newest" is remembered; a new nightly snapshot shows up within this time.
NEWEST_TTL_S = 30


def snapshot_pk(request, *, dataset: str, subset: str, definition: str) -> int:
    """The pk asked for by ``?snapshot=`` or the newest one of the subset × definition (0 if none).

    The newest pk is cached for :data:`NEWEST_TTL_S` seconds, so a cached page costs no database query.
    """
    wanted = request.GET.get("snapshot")
    if wanted:
        pk = ascii_int(wanted)
        if pk is None:
            raise Http404("snapshot must be a number")
        return pk
    return cached(
        f"newest:{dataset}:{subset}:{definition}",
        lambda: _snapshots(dataset, subset, definition).values_list("pk", flat=True).first() or 0,
        timeout=NEWEST_TTL_S,
    )


def _snapshots(dataset: str, subset: str, definition: str):
    return RankingSnapshot.objects.filter(
        subset__dataset__slug=dataset, subset__slug=subset, definition=definition
    )


def find_snapshot(request, *, dataset: str, subset: str, definition: str) -> RankingSnapshot:
    """The snapshot of :func:`snapshot_pk`, checked to belong to the subset × definition (404 otherwise)."""
    pk = snapshot_pk(request, dataset=dataset, subset=subset, definition=definition)
    # the report (about 10 MB at 100 methods) is read when a page needs it, or in parts (report_value)
    snap = (
        _snapshots(dataset, subset, definition)
        .filter(pk=pk)
        .select_related("subset", "dataset")
        .defer("report", "inputs")
        # what the pages show of the inputs (about 200 kB at 20 000 targets)
        .annotate(n_targets=KeyTransform("targets", "inputs"),
                  input_dataset_version=KeyTransform("dataset_version", "inputs"))
        .first()
    )
    if snap is None:
        raise Http404("no ranking snapshot for this subset and definition yet")
    return snap


def _choice(request, name: str, allowed, default: str) -> str:
    value = request.GET.get(name, default)
    return value if value in allowed else default


class RankingIndexView(TemplateView):
    """Every dataset's subsets and definitions with their newest snapshot."""

    template_name = "comparna/rankings_index.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        datasets = []
        for dataset in grouped(Dataset.objects.order_by("slug")):
            datasets.append({"dataset": dataset, "snapshots": newest_snapshot_summaries(dataset=dataset),
                             **dataset_group(dataset)})
        ctx["datasets"] = datasets
        ctx["min_common"] = thresholds.MIN_COMMON
        return ctx


def cannot_be_ranked(dataset: Dataset, n_targets: int | None) -> bool:
    """A subset of a static dataset with fewer targets than a verdict needs (issue 37: ArchiveII's
    "Pseudoknotted, short" has 1): it never gets a win, loss or draw, so it is marked rather than shown
    as a ranking. A PDB subset grows every week and may reach the number."""
    return dataset.kind == Dataset.Kind.STATIC and (n_targets or 0) < thresholds.MIN_COMMON


class DatasetRankingView(View):
    """All subsets of one dataset on one page (compact tables), with links to the full subset pages."""

    template_name = "comparna/rankings.html"

    def get(self, request, dataset: str):
        dataset = get_object_or_404(Dataset, slug=dataset)
        # the newest snapshot of each subset × definition, without its report and inputs (its live state and
        # sizes are stored in the background: ranking_lives reads one row per snapshot)
        snapshots = newest_snapshots(dataset=dataset)
        progress = cached(f"progress:dataset:{dataset.pk}", lambda: prediction_progress(dataset=dataset), 30)
        live = ranking_lives(snapshots.values())
        stamps = hashlib.sha256(",".join(f"{pk}.{v['stamp']}" for pk, v in live.items()).encode()).hexdigest()
        key = (
            f"dataset-page:{dataset.pk}:{dataset.version}:{stamps[:24]}"
            + f":{progress['finished']}:{progress['pending']}:{data_version()}"  # a background refresh
        )

        def render() -> str:
            sections = []
            stored = ranking_rows_of(snapshots.values())  # in one query
            for subset in dataset.subsets.all():
                for definition in subset.definitions():
                    snap = snapshots.get((subset.pk, definition))
                    rows = ranked_rows(stored[snap.pk]) if snap else []
                    state = live.get(snap.pk) if snap else None
                    n_targets = state["n_targets"] if state else subset.targets.count()
                    sections.append(
                        {
                            "subset": subset,
                            "definition": definition,
                            "snapshot": snap,
                            # an overview: each subset's first rows (every row is on the subset's page)
                            "rows": rows[:OVERVIEW_ROWS],
                            "rows_total": len(rows),
                            "more": len(rows) > OVERVIEW_ROWS,
                            "live": state,
                            "n_targets": n_targets,
                            "unrankable": cannot_be_ranked(dataset, n_targets),
                            "dataset_version": state["dataset_version"] if state else None,
                            "common_targets_ranked": state["common_targets_ranked"] if state else None,
                            "summary": None
                            if snap
                            else unranked_summary(subset=subset, definition=definition),
                        }
                    )
            with_provenance([r for s in sections for r in s["rows"]], dataset=dataset)  # one query (issue 36)
            return render_to_string(
                self.template_name,
                {"dataset": dataset, "sections": sections, "progress": progress},
                request=request,
            )

        return HttpResponse(cached(key, render, timeout=30))


class SubsetRankingView(View):
    """One subset × definition: the sortable, filterable ranking table of a snapshot and the rank history."""

    template_name = "comparna/subset_ranking.html"

    def get(self, request, dataset: str, subset: str, definition: str):
        pk = snapshot_pk(request, dataset=dataset, subset=subset, definition=definition)
        sort = _choice(request, "sort", SORT_KEYS, "rank")
        direction = _choice(request, "dir", ("asc", "desc"), "asc")
        kind = _choice(request, "kind", KIND_FILTERS, "all")
        protocol = _choice(request, "protocol", PROTOCOLS, "target")
        explicit = "snapshot" in request.GET
        live = cache_get(f"ranking-live:{pk}")
        key = (
            f"subset-page:{dataset}:{subset}:{definition}:{pk}:{sort}:{direction}:{kind}:{int(explicit)}:"
            f"{protocol}:"
        )
        page = cache_get(key + live["stamp"]) if live else None
        if page is not None:
            return HttpResponse(page)
        snap = find_snapshot(request, dataset=dataset, subset=subset, definition=definition)
        live = ranking_live(snap)
        pending: list[bool] = []

        def render() -> str:
            # the report's parts it shows, never the whole report (about 10 MB at 100 methods, issue 28)
            view, shown = snapshot_protocol(snap, protocol)
            robustness, robustness_targets, clusters, common_targets, decisions, robustness_n, conditional = (
                report_values(snap, ("robustness",), ("robustness_targets",), ("clusters",),
                              ("common_targets_ranked",), ("decisions",), ("robustness_n",),
                              ("within_families", "methods")))
            conditional_label = report_values(snap, ("within_families", "label"))[0] if conditional else None
            all_rows = ranking_rows(snap, shown)
            pending.append(any(r.get("pending") for r in all_rows))
            rows = with_provenance(with_compare_links(ranked_rows(all_rows)), dataset=snap.dataset)
            others = list(
                RankingSnapshot.objects.filter(subset=snap.subset, definition=definition).values(
                    "pk", "computed_at"
                )[:30]
            )
            siblings = [(s, d) for s in snap.dataset.subsets.all() for d in s.definitions()]
            return render_to_string(
                self.template_name,
                {
                    "dataset": snap.dataset,
                    "subset": snap.subset,
                    "definition": definition,
                    "snapshot": snap,
                    "unrankable": cannot_be_ranked(snap.dataset, snap.n_targets),
                    "rows": sort_and_filter(rows, sort=sort, direction=direction, kind=kind),
                    "n_all": len(rows),
                    "sort": sort,
                    "dir": direction,
                    "kind": kind,
                    "has_comparative": any(r["comparative"] for r in rows),
                    "overview_json": overview_figure(rows),
                    "history": (history := subset_history(snap)),
                    "history_json": history["figure"],
                    "others": others,
                    "siblings": siblings,
                    "robustness": robustness or [],
                    "robustness_targets": robustness_targets,
                    "columns": header_links(
                        sort=sort, direction=direction, kind=kind, snapshot=snap if explicit else None,
                        protocol=shown,
                    ),
                    "protocol": shown,
                    "protocol_asked": protocol,
                    "protocol_label": view.get("protocol_label"),
                    "clusters": clusters,
                    # the share of pairs decided and why the rest are not (issue 35; None before it)
                    "decisions": describe_decisions(decisions) if shown == "target" else None,
                    "decision_counts": decisions if shown == "target" else None,
                    "robustness_n": robustness_n,
                    # where the floor fires: the within-these-families view, labelled, never mixed in
                    "conditional": conditional if shown == "target" else None,
                    "conditional_label": conditional_label,
                    "thresholds": thresholds,
                    "conventions": view.get("conventions", {}),
                    "explicit_snapshot": explicit,
                    "live": live,
                    "common_targets": common_targets,
                    "top": rows[0] if rows else None,
                    "second": rows[1] if len(rows) > 1 else None,
                    "methods_for_picker": [r for r in all_rows if r["pk"]],
                },
                request=request,
            )

        page = cache_get(key + live["stamp"])
        if page is None:
            page = render()
            if not any(pending):  # rows still being stored in the background are never cached (stop 43)
                cache_set(key + live["stamp"], page, 3600)
        return HttpResponse(page)


def with_compare_links(rows: list[dict]) -> list[dict]:
    """Each row with the method its "compare" link pairs it with: the first-ranked, or the second for it."""
    linked = [r for r in rows if r.get("pk")]
    out = []
    for r in rows:
        others = [o for o in linked if o["method"] != r["method"]]
        out.append({**r, "compare_with": others[0] if others else None})
    return out


#: (sort key, header, tooltip, numeric) of the ranking table (the primary, target-level verdict), in display
#: order; thresholds are formatted from :mod:`comparna.rna.thresholds`.
COLUMNS = [
    (
        "rank",
        "Rank (95 % interval)",
        "Competition rank by net wins (wins − losses; ties share a rank and are listed by mean MCC); in "
        "brackets the 95 % interval of the rank over a bootstrap of families, with the same test and rule",
        True,
    ),
    ("method", "Method", "", False),
    (
        "wins",
        "Wins",
        f"Pairwise comparisons won: clustered Wilcoxon signed-rank test on per-target MCC differences, "
        f"Holm-adjusted p < {thresholds.ALPHA:g}",
        True,
    ),
    ("losses", "Losses", "Pairwise comparisons lost", True),
    (
        "draws",
        "Draws",
        f"Equivalent: the family-clustered 90 % interval of the mean per-target MCC difference lies inside "
        f"±{thresholds.EQUIVALENCE_DELTA:g} MCC",
        True,
    ),
    (
        "unknown",
        "?",
        f"No verdict: fewer than {thresholds.MIN_COMMON} common targets, too few families for any verdict, "
        "the test and the mean disagree, or neither a win nor an equivalence yet",
        True,
    ),
    (
        "mcc",
        "Mean MCC (n)",
        "Mean MCC: the mean per-target MCC on exactly the targets that decided the method's place (its "
        "pairwise sets with a win, loss or draw); n = their number",
        True,
    ),
    ("sensitivity", "Sensitivity", "TP / (TP + FN), pooled over the common targets (counted above)", True),
    ("ppv", "PPV", "TP / (TP + FP − compatible FP), pooled over the common targets (counted above)", True),
    ("targets", "Coverage", "Targets with a scored prediction by this method / targets of the subset", True),
    (
        "mean_mcc",
        "Common-target mean MCC (95 % CI)",
        "Mean per-target MCC on the common targets (every ranked method scored them), with a 10 000-resample "
        "bootstrap percentile CI",
        True,
    ),
]

#: The columns of the CompaRNA 2013 protocol's view (a labelled view to reproduce the 2013 tables).
COLUMNS_2013 = [
    ("rank", "Rank", "Competition rank by the number of pairwise wins (CompaRNA 2013 protocol)", True),
    ("method", "Method", "", False),
    (
        "wins",
        "Wins",
        f"CompaRNA 2013 protocol: Wilcoxon p < {thresholds.ALPHA:g} on {thresholds.REPLICATES_2013} pooled "
        "MCCs of random 90 % subsamples (pseudo-replicates of the same targets: not evidence)",
        True,
    ),
    ("losses", "Losses", "Pairwise comparisons lost", True),
    ("draws", "Draws", f"p ≥ {thresholds.ALPHA:g} on the {thresholds.REPLICATES_2013} subsample MCCs", True),
    ("unknown", "?", f"Fewer than {thresholds.MIN_COMMON} common targets: no verdict", True),
    (
        "pooled_mcc",
        "Pooled MCC",
        "Pooled MCC: the Matthews correlation coefficient of the counts pooled over the common targets "
        "(every ranked method scored them)",
        True,
    ),
    ("sensitivity", "Sensitivity", "TP / (TP + FN), pooled over the common targets", True),
    ("ppv", "PPV", "TP / (TP + FP − compatible FP), pooled over the common targets", True),
    ("targets", "Coverage", "Targets with a scored prediction by this method / targets of the subset", True),
    (
        "mean_mcc",
        "Common-target mean MCC (95 % CI)",
        "Mean per-target MCC on the common targets (every ranked method scored them), with a 10 000-resample "
        "bootstrap percentile CI",
        True,
    ),
]


def header_links(
    *, sort: str, direction: str, kind: str, snapshot: RankingSnapshot | None, protocol: str = "target"
) -> list[dict]:
    """Column headers with the server-side sort link each one points to (used when JavaScript is off); the
    2013 protocol's view has its own wording of the verdict columns and no rank interval."""
    out = []
    for key, label, tip, numeric in COLUMNS if protocol == "target" else COLUMNS_2013:
        if key == sort:
            nxt = "desc" if direction == "asc" else "asc"
            aria = "ascending" if direction == "asc" else "descending"
        else:
            nxt = "asc" if key in ("rank", "method") or not numeric else "desc"
            aria = "none"
        query = f"?sort={key}&dir={nxt}&kind={kind}" + (f"&snapshot={snapshot.pk}" if snapshot else "")
        query += "" if protocol == "target" else f"&protocol={protocol}"
        out.append({"key": key, "label": label, "tip": tip, "numeric": numeric, "href": query, "aria": aria})
    return out


class RankingMatrixView(View):
    """The pairwise verdicts of a snapshot, common targets in the lower triangle."""

    template_name = "comparna/matrix.html"

    def get(self, request, dataset: str, subset: str, definition: str):
        snap = find_snapshot(request, dataset=dataset, subset=subset, definition=definition)
        live = ranking_live(snap)

        def render() -> str:
            return render_to_string(
                self.template_name,
                {
                    "dataset": snap.dataset,
                    "subset": snap.subset,
                    "definition": definition,
                    "snapshot": snap,
                    "matrix": pairwise_matrix(snap),
                    "state": live["state"],
                    "thresholds": thresholds,
                    "protocol": snapshot_protocol(snap)[1],
                },
                request=request,
            )

        key = f"matrix-page:{snap.pk}:{int('snapshot' in request.GET)}:{live['stamp']}"
        return HttpResponse(cached(key, render, timeout=3600))


class RankingDownloadView(View):
    """A snapshot's ranking as CSV or JSON (``?snapshot=``; the newest one otherwise)."""

    def get(self, request, dataset: str, subset: str, definition: str, fmt: str):
        if fmt not in ("csv", "json"):
            raise Http404("csv or json")
        snap = find_snapshot(request, dataset=dataset, subset=subset, definition=definition)
        protocol = _choice(request, "protocol", PROTOCOLS, "target")
        suffix = "" if protocol == "target" else f"-protocol{protocol}"
        name = f"ranking-{dataset}-{subset}-{definition}-snapshot{snap.pk}{suffix}.{fmt}"
        if fmt == "csv":
            response = HttpResponse(ranking_csv(snap, protocol), content_type="text/csv; charset=utf-8")
        else:
            response = JsonResponse(ranking_export(snap, protocol), json_dumps_params={"indent": 1})
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


__all__ = [
    "DatasetRankingView",
    "RankingDownloadView",
    "RankingIndexView",
    "RankingMatrixView",
    "Subset",
    "SubsetRankingView",
]
