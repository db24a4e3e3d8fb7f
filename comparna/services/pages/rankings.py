"""The ranking pages: a subset's table (sortable, filterable), its rank history, the verdict matrix; and the
rankings at a glance on the home page. Everything derived from an immutable snapshot is cached by its pk."""

from __future__ import annotations

from collections import defaultdict

from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.rna.statistics import bootstrap_ci_mean
from comparna.services.pages.common import cached, ci_dict, current_scores, method_directory
from comparna.services.pages.figures import rank_history_figure
from comparna.services.uncertainty import cluster_labels


def ranking_rows(snapshot: RankingSnapshot) -> list[dict]:
    """The snapshot's rows with method links, input kind and the mean per-target MCC with a 95 % CI.

    Cached for ever under the snapshot's pk: the report is immutable, and the CI uses the scores present when
    first shown (normally the ones the snapshot was computed from).
    """

    def compute() -> list[dict]:
        directory = method_directory()
        names = [row["method"] for row in snapshot.report.get("methods", [])]
        per_method: dict[str, list[float]] = defaultdict(list)
        per_method_targets: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for s in current_scores(definition=snapshot.definition, subset=snapshot.subset, methods=names):
            per_method[s.method].append(s.mcc)
            per_method_targets[s.method].append((s.target_id, s.source_id))
        labels = cluster_labels({t for targets in per_method_targets.values() for t in targets})
        rows = []
        for row in snapshot.report.get("methods", []):
            info = directory.get(row["method"], {"pk": None, "input_kind": "single", "comparative": False})
            values = per_method.get(row["method"], [])
            mean_mcc = ci_dict(values, seed=snapshot.seed)
            if mean_mcc is not None:
                # beside it: whole Rfam families / sequence clusters resampled
                clusters = [labels[t] for t, _ in per_method_targets[row["method"]]]
                cci = bootstrap_ci_mean(values, seed=snapshot.seed, clusters=clusters)
                mean_mcc.update(clustered_low=cci.low, clustered_high=cci.high, clusters=len(set(clusters)))
            rows.append({**row, **info, "mean_mcc": mean_mcc})
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
        pair_stats = snapshot.report.get("pair_statistics", {}).get("pairs", {})

        def equivalence(a: str, b: str) -> str | None:
            first, second = sorted((a, b))
            eq = pair_stats.get(first, {}).get(second, {}).get("equivalence")
            return eq["verdict"] if eq else None

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
                            "equivalence": equivalence(a, b),
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
        return {"methods": names, "rows": rows, "has_equivalence": bool(pair_stats)}

    return cached(f"matrix:{snapshot.pk}", compute)


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
