"""The per-family page (each method's mean MCC with its CI per RNA family, as a heat map) and the unseen
page (each method's rank in the full and in the leakage-aware ranking of a dataset)."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
from django.db.models import Count
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Score, Subset
from comparna.rna import statistics
from comparna.rna.families import FAMILIES, family_slug
from comparna.services.leakage import COVERAGE, IDENTITY, latest_unseen
from comparna.services.pages.common import UNASSIGNED_FAMILY, cached, method_directory
from comparna.services.ranking_scope import is_ranked
from comparna.tallies.models import FamilySummary

__all__ = ["family_breakdown", "family_ranking", "unseen_comparison"]

#: Bootstrap resamples of the page's CIs (fewer than the rankings' 10 000: a table of many small cells).
RESAMPLES = 2000
SEED = 0


def _family_order(labels: set[str]) -> list[str]:
    canonical = [f.label for f in FAMILIES if f.label in labels]
    others = sorted(label for label in labels if label and label not in canonical)
    return canonical + others + ([""] if "" in labels else [])


def _ci(values: list[float], clusters: list[str] | None = None) -> dict:
    ci = statistics.bootstrap_ci_mean(np.asarray(values, dtype=np.float64), seed=SEED, resamples=RESAMPLES,
                                      clusters=clusters)
    return {"mean": ci.estimate, "low": ci.low, "high": ci.high, "n": ci.n, "small": ci.small}


def _breakdown(dataset: Dataset, definition: str) -> dict:
    rows = (
        Score.objects.current()
        .filter(definition=definition, prediction__target__dataset=dataset)
        .values_list("prediction__method_version__method__name", "prediction__target__source_id",
                     "prediction__target__family", "mcc")
        .order_by("prediction__method_version__method__name", "prediction__target__source_id")
    )
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    overall: dict[str, tuple[list[float], list[str]]] = defaultdict(lambda: ([], []))
    for name, sid, family, mcc in rows:
        per[name][family].append(mcc)
        values, clusters = overall[name]
        values.append(mcc)
        clusters.append(f"family:{family}" if family else f"seq:{sid}")
    families = _family_order({f for fams in per.values() for f in fams})
    targets = dict(dataset.targets.values_list("family").annotate(n=Count("id")).order_by())
    methods = []
    for name in per:
        values, clusters = overall[name]
        methods.append({
            "method": name,
            "overall": _ci(values),
            "overall_clustered": _ci(values, clusters),
            "families": {f: _ci(v) for f, v in per[name].items()},
        })
    methods.sort(key=lambda m: (-m["overall"]["mean"], m["method"]))
    return {
        "families": [{"label": f or UNASSIGNED_FAMILY, "key": f, "slug": family_slug(f) if f else "",
                      "targets": targets.get(f, 0)} for f in families],
        "methods": methods,
        "resamples": RESAMPLES,
    }


def family_breakdown(dataset: Dataset, definition: str) -> dict:
    """Per method: mean MCC with 95 % bootstrap CI per family and overall (the overall CI also clustered by
    family: whole families resampled, targets without a family each their own cluster), the heat grid and
    the family subsets of the dataset that have rankings."""
    # computed in the background (refresh_family_summaries, issue 28); live only before its first run
    stored = FamilySummary.objects.filter(dataset=dataset, definition=definition).values_list(
        "data", flat=True).first()
    data = stored if stored is not None else cached(
        f"families:{dataset.slug}:{definition}:{_stamp(dataset, definition)}",
        lambda: _breakdown(dataset, definition), timeout=3600)
    directory = method_directory()
    for m in data["methods"]:
        m["pk"] = directory.get(m["method"], {}).get("pk")
        m["cells"] = [m["families"].get(f["key"]) for f in data["families"]]
    subsets = {s.slug: s for s in Subset.objects.filter(dataset=dataset, slug__startswith="family-")}
    for f in data["families"]:
        f["subset"] = f"family-{f['slug']}" if f"family-{f['slug']}" in subsets else None
    return {**data, "heat": heat_grid(data) if data["methods"] else None, "state": dataset_state(dataset)}


def _stamp(dataset: Dataset, definition: str) -> str:
    latest = Score.objects.filter(prediction__target__dataset=dataset, definition=definition).order_by("-pk")
    return f"{latest.values_list('pk', flat=True).first() or 0}:{dataset.version}"


def refresh_family_summaries() -> int:
    """Store the families page's numbers of every dataset × definition whose scores changed since they were
    last computed (a background task's work: it reads all of a dataset's scores); returns how many."""
    done = 0
    for dataset in Dataset.objects.order_by("slug"):
        for definition in dataset.definitions:
            stamp = _stamp(dataset, definition)
            if FamilySummary.objects.filter(dataset=dataset, definition=definition, stamp=stamp).exists():
                continue
            # as the JSON field gives it back; PostgreSQL's jsonb has no NaN
            data = json.loads(json.dumps(_breakdown(dataset, definition)), parse_constant=lambda _: None)
            FamilySummary.objects.update_or_create(
                dataset=dataset, definition=definition,
                defaults={"stamp": stamp, "data": data, "computed_at": timezone.now()},
            )
            done += 1
    return done


def dataset_state(dataset: Dataset) -> dict:
    """Settled or provisional for figures computed from a dataset's current scores (the families page):
    provisional while a prediction of a public method on the dataset is unfinished (issue 27). Cached for
    30 s, like the ranking pages' state."""
    from comparna.services.progress import prediction_progress

    def compute() -> dict:
        pending = prediction_progress(dataset=dataset)["pending"]
        plural = "s" if pending != 1 else ""
        reasons = [f"{pending} prediction{plural} on this dataset still unfinished"] if pending else []
        return {"settled": not pending, "label": "provisional" if pending else "settled", "reasons": reasons}

    return cached(f"dataset-state:{dataset.pk}", compute, timeout=30)


def family_ranking(data: dict, family: str) -> dict | None:
    """The methods on one family, by mean MCC (highest first), from :func:`family_breakdown`'s numbers;
    None for a family the dataset does not have."""
    info = next((f for f in data["families"] if f["key"] == family), None)
    if info is None:
        return None
    rows = [{"method": m["method"], "pk": m["pk"], **m["families"][family]}
            for m in data["methods"] if family in m["families"]]
    rows.sort(key=lambda r: (-r["mean"], r["method"]))
    return {"family": info, "rows": rows}


#: Viridis sampled at nine even steps from 0 to 1 (perceptually uniform, readable with every common
#: colour-vision deficiency and in grey): the heat map's colour of a mean MCC, interpolated between them.
VIRIDIS = ("#440154", "#472D7B", "#3B528B", "#2C728E", "#21918C", "#28AE80", "#5EC962", "#ADDC30", "#FDE725")


#: A cell's colour is full strength from this many targets on, and fades towards white below it (issue 37:
#: an n = 1 cell was coloured like an n = 392 one).
HEAT_FULL_N = 30
#: The strength of an n = 1 cell (it stays visible, but reads as tentative).
HEAT_MIN_STRENGTH = 0.2


def heat_strength(n: int | None) -> float:
    """How strongly a cell of ``n`` targets is coloured: 1 from :data:`HEAT_FULL_N` targets on, down to
    :data:`HEAT_MIN_STRENGTH` at n = 1, growing with the square root of n (as the interval narrows)."""
    if n is None or n >= HEAT_FULL_N:
        return 1.0
    n = max(1, int(n))
    scale = (n**0.5 - 1) / (HEAT_FULL_N**0.5 - 1)
    return HEAT_MIN_STRENGTH + (1 - HEAT_MIN_STRENGTH) * scale


def heat_colour(value: float, n: int | None = None) -> tuple[str, str]:
    """Background and text colour of a heat-map cell of mean MCC ``value`` (clamped to [0, 1]) on ``n``
    targets (faded towards white for small n: :func:`heat_strength`; None: full strength)."""
    x = min(1.0, max(0.0, float(value))) * (len(VIRIDIS) - 1)
    k = min(int(x), len(VIRIDIS) - 2)
    a, b = VIRIDIS[k], VIRIDIS[k + 1]
    strength = heat_strength(n)
    rgb = [
        round(
            255
            + strength
            * (int(a[i : i + 2], 16) + (x - k) * (int(b[i : i + 2], 16) - int(a[i : i + 2], 16)) - 255)
        )
        for i in (1, 3, 5)
    ]
    luminance = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return "#" + "".join(f"{c:02X}" for c in rgb), "#000000" if luminance > 140 else "#FFFFFF"


def heat_grid(data: dict) -> dict:
    """The heat map as a table: a row per method, a column per family, each cell its mean MCC coloured on
    the viridis scale, faded for few targets, with its n in the cell and its CI in the cell's title (an
    HTML grid rather than a chart, so its axes stay in sight while it scrolls and its labels are never
    clipped)."""
    rows = []
    for m in data["methods"]:
        cells = []
        for f, c in zip(data["families"], m["cells"], strict=True):
            if c is None:
                cells.append(None)
                continue
            bg, fg = heat_colour(c["mean"], c["n"])
            cells.append(
                {
                    "mean": c["mean"],
                    "n": c["n"],
                    "small": c["n"] < HEAT_FULL_N,
                    "bg": bg,
                    "fg": fg,
                    "title": f"{m['method']} · {f['label']}: mean MCC {c['mean']:.3f} "
                    f"[{c['low']:.3f}, {c['high']:.3f}], n = {c['n']}",
                }
            )
        rows.append({"method": m["method"], "pk": m["pk"], "cells": cells})
    legend = [{"value": v / 4, "bg": heat_colour(v / 4)[0], "fg": heat_colour(v / 4)[1]} for v in range(5)]
    faded = [
        {"n": n, "bg": heat_colour(0.75, n)[0], "fg": heat_colour(0.75, n)[1]} for n in (1, 5, HEAT_FULL_N)
    ]
    return {"rows": rows, "legend": legend, "faded": faded, "full_n": HEAT_FULL_N}


def _readable_declaration(declaration: dict, names: dict[str, str]) -> dict:
    """The stored declaration with its CompaRNA datasets named as readers know them (slugs stay in the
    stored report, which the admin and downloads read)."""
    return {**declaration, "datasets": [names.get(d, d) for d in declaration.get("datasets") or []]}


def unseen_comparison(dataset: Dataset, definition: str) -> dict | None:
    """Per method: rank in the full ranking (the "All RNAs" snapshot the unseen ranking was computed with)
    and in the unseen ranking, the move, the targets it could not have seen and its declaration."""
    row = latest_unseen(dataset, definition)
    if row is None:
        return None
    report = row.report
    unseen = {m["method"]: m for m in report.get("methods", [])}
    full = report.get("full_ranks", {})
    # its state and link only: not its report and inputs (about 10 MB at 100 methods)
    full_snapshot = (
        RankingSnapshot.objects.filter(pk=report.get("full_snapshot"))
        .select_related("dataset", "subset")
        .defer("report", "inputs")
        .first()
    )
    directory = method_directory()
    names = dict(Dataset.objects.values_list("slug", "name"))  # a reader sees a dataset's name, not its slug
    out = []
    for name in sorted(set(full) | set(report.get("per_method", {})),
                       key=lambda n: (full.get(n, 10**6), n)):
        if name not in directory:
            continue  # a method no longer public
        info = report.get("per_method", {}).get(name, {})
        u = unseen.get(name)
        if u is not None and not is_ranked(u):
            u = None  # only "?" verdicts on its unseen targets: no rank, not a shared first one
        move = None if u is None or name not in full else full[name] - u["rank"]
        out.append({
            "method": name, "pk": directory[name]["pk"], "full_rank": full.get(name),
            "unseen_rank": u["rank"] if u else None, "move": move, "move_abs": abs(move or 0), "unseen": u,
            "info": info, "declaration": _readable_declaration(info.get("declaration") or {}, names),
            "not_ranked": report.get("not_ranked", {}).get(name, ""),
        })
    state = None
    if full_snapshot is not None:
        from comparna.services.pages.ranking_status import ranking_live

        state = ranking_live(full_snapshot)["state"]
    return {
        "row": row, "methods": out, "full_snapshot": full_snapshot, "state": state,
        "unavailable": report.get("unavailable", []),
        "screened_against": [names.get(s, s) for s in report.get("screened_against", [])],
        "identity": report.get("identity_threshold", IDENTITY),
        "coverage": report.get("coverage_longer", COVERAGE),
        "ranked": len(unseen),
    }
