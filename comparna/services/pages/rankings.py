"""The ranking pages: a subset's table (sortable, filterable), its rank history, the verdict matrix; and the
rankings at a glance on the home page. Everything derived from an immutable snapshot is cached by its pk."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import numpy as np
from django.db.models import Func, IntegerField
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from comparna.csv_cells import safe_writer
from comparna.models import Dataset, RankingSnapshot, Subset
from comparna.rna import thresholds
from comparna.rna.overview import overview_point
from comparna.rna.ranking import protocol_view
from comparna.rna.statistics import bootstrap_ci_mean
from comparna.services.pages.common import (
    cache_get,
    cache_set,
    cached,
    ci_dict,
    current_scores,
    method_directory,
    report_value,
    report_values,
)
from comparna.services.pages.export_fields import DEPRECATED_FIELDS, EXPORT_COLUMNS, named_numbers
from comparna.services.pages.ranking_status import newest_snapshots, ranking_live, ranking_lives
from comparna.services.pages.snapshot_data import snapshot_scores
from comparna.services.ranking_scope import common_targets, is_ranked
from comparna.services.uncertainty import cluster_labels
from comparna.tallies.models import RankingRows, RankingStatus

PROTOCOLS = ("target", "2013")


def snapshot_view(snapshot: RankingSnapshot, protocol: str = "target") -> tuple[dict, str]:
    """The snapshot's report under ``protocol`` ("target": the primary verdict; "2013": the CompaRNA 2013
    protocol) and the protocol actually shown: a snapshot stored before issue 27 has only the 2013 verdicts,
    which are then shown under their label, never as target-level ones."""
    view = protocol_view(snapshot.report, protocol if protocol in PROTOCOLS else "target")
    if view is not None:
        return view, view.get("protocol", protocol)
    return protocol_view(snapshot.report, "2013") or dict(snapshot.report), "2013"


def snapshot_protocol(snapshot: RankingSnapshot, protocol: str = "target") -> tuple[dict, str]:
    """What a page shows of :func:`snapshot_view` — ``{"protocol_label", "conventions"}`` and the protocol
    actually shown — read from the report in parts (:func:`report_values`), never the whole report."""
    protocol = protocol if protocol in PROTOCOLS else "target"
    stored, label, conventions, label_2013, conventions_2013 = report_values(
        snapshot, ("protocol",), ("protocol_label",), ("conventions",),
        ("protocol_2013", "label"), ("protocol_2013", "conventions"),
    )
    if stored is None:  # stored before issue 27: its top-level verdicts are the 2013 protocol's
        return {"protocol_label": thresholds.PROTOCOL_2013_LABEL, "conventions": conventions or {}}, "2013"
    if protocol == "2013" and label_2013 is not None:
        return {"protocol_label": label_2013, "conventions": conventions_2013 or {}}, "2013"
    shown = stored if protocol == "target" else "2013"  # no 2013 view: its own, labelled 2013
    return {"protocol_label": label, "conventions": conventions or {}}, shown


def ranking_rows(
    snapshot: RankingSnapshot, protocol: str = "target", *, compute_only: bool = False
) -> list[dict]:
    """The snapshot's rows (under ``protocol``) with method links, input kind, the rank interval, the mean
    per-target MCC on the targets that decided the order (with n) and the mean MCC with a 95 % CI.

    Cached for ever under the snapshot's pk: the report is immutable, and the CI uses the scores present when
    first computed (normally the ones the snapshot was computed from). A page reads the rows
    :func:`store_ranking_rows` stored in the background; ``compute_only`` computes them (what it stores).

    Until a newest snapshot's rows are stored, a page gets them from the report without the mean MCC's
    intervals and the overview, marked ``"pending"``: no score is read in a request (stop 43).
    """
    if not compute_only and (found := stored_ranking_rows(snapshot, protocol)) is not None:
        return found
    view, shown = snapshot_view(snapshot, protocol)

    def finish(rows: list[dict]) -> list[dict]:
        shared = defaultdict(int)
        for r in rows:
            if r["ranked"]:
                shared[r["rank"]] += 1
        for r in rows:
            r["tied"] = r["ranked"] and shared[r["rank"]] > 1
            r["rank_text"] = (f"{r['rank']}=" if r["tied"] else str(r["rank"])) if r["ranked"] else "–"
            r["protocol"] = shown
            low, high = r.get("rank_low"), r.get("rank_high")
            r["rank_interval"] = None if low is None or not r["ranked"] else (
                str(low) if low == high else f"{low}–{high}"
            )
        return rows

    def light_rows() -> list[dict]:
        directory = method_directory()
        unknown = {"pk": None, "input_kind": "single", "comparative": False}
        return finish([
            {**row, **directory.get(row["method"], unknown), "mean_mcc": None, "overview": None,
             "pending": True, **ranked_fields(snapshot, row)}
            for row in view.get("methods", [])
        ])

    def compute() -> list[dict]:
        directory = method_directory()
        names = [row["method"] for row in view.get("methods", [])]
        per_method: dict[str, list[float]] = defaultdict(list)
        per_method_targets: dict[str, list[tuple[int, str]]] = defaultdict(list)
        # (sensitivity, PPV) per target: the PPV–sensitivity overview
        per_method_sp: dict[str, list[tuple[float, float]]] = defaultdict(list)
        # the snapshot's own scores on its common targets (the same RNAs for every ranked method) when it
        # stores them; older snapshots: the current scores
        common = common_targets(snapshot.report)
        scores = snapshot_scores(snapshot, names)
        if scores is None:
            scores = current_scores(definition=snapshot.definition, subset=snapshot.subset, methods=names)
        for s in scores:
            if common is not None and s.source_id not in common:
                continue
            per_method[s.method].append(s.mcc)
            per_method_targets[s.method].append((s.target_id, s.source_id))
            per_method_sp[s.method].append((s.sensitivity, s.ppv))
        labels = cluster_labels({t for targets in per_method_targets.values() for t in targets})
        rows = []
        for row in view.get("methods", []):
            info = directory.get(row["method"], {"pk": None, "input_kind": "single", "comparative": False})
            values = per_method.get(row["method"], [])
            mean_mcc = ci_dict(values, seed=snapshot.seed)
            if mean_mcc is not None:
                # beside it: whole Rfam families / sequence clusters resampled
                clusters = [labels[t] for t, _ in per_method_targets[row["method"]]]
                cci = bootstrap_ci_mean(values, seed=snapshot.seed, clusters=clusters)
                mean_mcc.update(clustered_low=cci.low, clustered_high=cci.high, clusters=len(set(clusters)))
            sp = np.asarray(per_method_sp.get(row["method"], []), dtype=np.float64).reshape(-1, 2)
            overview = overview_point(sp[:, 0], sp[:, 1], seed=snapshot.seed)
            rows.append(
                {**row, **info, "mean_mcc": mean_mcc, "overview": overview, **ranked_fields(snapshot, row)}
            )
        return finish(rows)

    if compute_only:
        return compute()
    # asked above under ``protocol``; again only when the snapshot shows another (pre-issue-27: "2013")
    found = stored_ranking_rows(snapshot, shown) if shown != protocol else None
    if found is None:
        newer = RankingSnapshot.objects.filter(
            subset_id=snapshot.subset_id, definition=snapshot.definition, computed_at__gt=snapshot.computed_at
        )
        if not newer.exists():
            return light_rows()  # not cached: the stored rows replace them within minutes
        # an older snapshot replaced before its rows were stored, asked for by pk: computed once, cached
        return cached(f"ranking-rows:{snapshot.pk}:{shown}", compute)
    cache_set(f"ranking-rows:{snapshot.pk}:{shown}", found, None)
    return found


def stored_ranking_rows(snapshot: RankingSnapshot, protocol: str = "target") -> list[dict] | None:
    """The rows :func:`store_ranking_rows` stored in the background (or :func:`ranking_rows` cached) under
    ``protocol``, read without the report; None when neither exists. Never computes them: a page that only
    shows something beside its own content (the comparison's overview) reads these, no score."""
    if protocol not in PROTOCOLS:
        return None
    found = cache_get(f"ranking-rows:{snapshot.pk}:{protocol}")
    if found is None:
        found = RankingRows.objects.filter(snapshot=snapshot, protocol=protocol).values_list(
            "rows", flat=True).first()
    return found


def ranking_rows_of(snapshots) -> dict[int, list[dict]]:
    """:func:`ranking_rows` of several snapshots (primary protocol): the stored ones in one query."""
    out = {s.pk: found for s in snapshots if (found := cache_get(f"ranking-rows:{s.pk}:target")) is not None}
    out.update(RankingRows.objects.filter(snapshot__in=[s.pk for s in snapshots if s.pk not in out],
                                          protocol="target").values_list("snapshot_id", "rows"))
    return {s.pk: out[s.pk] if s.pk in out else ranking_rows(s) for s in snapshots}


def store_ranking_rows() -> int:
    """Store the page rows of the newest snapshot of every subset × definition, under each protocol it has,
    where missing: a periodic task's work (they read the subset's scores), so a ranking page never computes
    them in a request. Returns how many were stored."""
    done = 0
    for subset in Subset.objects.select_related("dataset"):
        for definition in subset.definitions():
            snapshot = subset.rankings.filter(definition=definition).first()
            if snapshot is None:
                continue
            for protocol in PROTOCOLS:
                _, shown = snapshot_view(snapshot, protocol)
                stored = RankingRows.objects.filter(snapshot=snapshot, protocol=shown)
                if shown != protocol or stored.exists():
                    continue
                rows = json.loads(json.dumps(ranking_rows(snapshot, protocol, compute_only=True)),
                                  parse_constant=lambda _: None)  # jsonb has no NaN
                RankingRows.objects.get_or_create(snapshot=snapshot, protocol=shown, defaults={"rows": rows})
                done += 1
    return done


def ranked_fields(snapshot: RankingSnapshot, row: dict) -> dict:
    """Whether the row is ranked, its coverage (scored / subset targets) and its pooled scores on the
    common targets of the ranked methods (None for snapshots that predate them)."""
    total = int(snapshot.inputs.get("targets") or 0)
    scored = int(row.get("targets", 0))
    common = snapshot.report.get("common_scores", {}).get(row["method"])
    return {
        "ranked": is_ranked(row),
        "coverage": {"scored": scored, "total": total, "percent": 100.0 * scored / total if total else 0.0},
        "common": common,
    }


def ranked_rows(rows: list[dict]) -> list[dict]:
    """The rows of ranked methods only (unranked ones are listed apart, with the reason)."""
    return [r for r in rows if r["ranked"]]


SORT_KEYS = {
    "rank": lambda r: r["rank"],
    "method": lambda r: r["method"].lower(),
    "wins": lambda r: r["wins"],
    "losses": lambda r: r["losses"],
    "draws": lambda r: r["draws"],
    "unknown": lambda r: r["unknown"],
    "mcc": lambda r: r["decided_mcc"] if r.get("decided_mcc") is not None else -2.0,
    "pooled_mcc": lambda r: (r["common"] or {}).get("mcc", r["mcc"]),
    "sensitivity": lambda r: (r["common"] or {}).get("sensitivity", r.get("sensitivity", 0.0)),
    "ppv": lambda r: (r["common"] or {}).get("ppv", r.get("ppv", 0.0)),
    "mean_mcc": lambda r: r["mean_mcc"]["mean"] if r.get("mean_mcc") else -2.0,
    "targets": lambda r: r["targets"],
}
KIND_FILTERS = ("all", "single", "comparative")


def sort_and_filter(
    rows: list[dict], *, sort: str = "rank", direction: str = "asc", kind: str = "all"
) -> list[dict]:
    """Rows sorted by a column of :data:`SORT_KEYS` and filtered by input kind (server-side, no JS). By rank,
    a shared rank keeps the report's order (by mean MCC on the decided targets, then name: the home page's
    glance and the dataset page list them so too, issue 37), not the names' order."""
    key = SORT_KEYS.get(sort, SORT_KEYS["rank"])
    if key is SORT_KEYS["rank"]:  # a stable sort: a shared rank's rows stay in the report's order
        out = sorted(rows, key=key, reverse=direction == "desc")
    else:
        out = sorted(rows, key=lambda r: (key(r), r["method"]), reverse=direction == "desc")
    if kind == "single":
        out = [r for r in out if not r["comparative"]]
    elif kind == "comparative":
        out = [r for r in out if r["comparative"]]
    return out


def pairwise_matrix(snapshot: RankingSnapshot) -> dict:
    """The verdict matrix in rank order: above the diagonal the row's verdict against the column, below the
    number of common targets ("Figure 2" of Puton et al. 2013)."""

    def compute() -> dict:
        directory = method_directory()
        # the parts it shows, extracted by the database (the whole report is about 10 MB at 100 methods)
        methods, verdicts, common = report_values(snapshot, ("methods",), ("verdicts",), ("common_targets",))
        names = [r["method"] for r in methods or []]
        verdicts, common = verdicts or {}, common or {}
        has_equivalence, equivalences = pair_equivalences(snapshot)

        def equivalence(a: str, b: str) -> str | None:
            return equivalences.get(tuple(sorted((a, b))))

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
        return {"methods": names, "rows": rows, "has_equivalence": has_equivalence}

    return cached(f"matrix:{snapshot.pk}", compute)


def pair_equivalences(snapshot: RankingSnapshot) -> tuple[bool, dict[tuple[str, str], str]]:
    """Whether the report has pair statistics, and each pair's equivalence verdict (``(first, second)`` in
    name order), extracted by the database: the pair statistics are a quarter of a report (its 4 950 pairs'
    intervals at 100 methods), the matrix needs one word of each."""
    from django.db import connection

    table = connection.ops.quote_name(RankingSnapshot._meta.db_table)
    if connection.vendor == "postgresql":  # the report made a value once (a jsonb is decompressed per use)
        sql = (f"SELECT a.key, b.key, b.value -> 'equivalence' ->> 'verdict' FROM "
               f"(SELECT (report || '{{}}'::jsonb) #> '{{pair_statistics,pairs}}' AS p FROM {table} "
               "WHERE id = %s OFFSET 0) s "
               "CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(s.p) = 'object' THEN s.p END) a "
               "LEFT JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(a.value) = 'object' THEN a.value END) b "
               "ON true")
    elif connection.vendor == "sqlite":
        sql = (f"SELECT a.key, b.key, json_extract(b.value, '$.equivalence.verdict') FROM {table} s "
               "JOIN json_each(s.report, '$.pair_statistics.pairs') a "
               "LEFT JOIN json_each(CASE WHEN a.type = 'object' THEN a.value END) b "
               "WHERE s.id = %s AND json_type(s.report, '$.pair_statistics.pairs') = 'object'")
    else:  # another database: the part of the report, read whole
        pairs = report_value(snapshot, "pair_statistics", "pairs") or {}
        out = {(a, b): (stats.get("equivalence") or {}).get("verdict")
               for a, seconds in pairs.items() for b, stats in (seconds or {}).items()}
        return bool(pairs), {k: v for k, v in out.items() if v}
    with connection.cursor() as cursor:
        cursor.execute(sql, [snapshot.pk])
        found = cursor.fetchall()
    return bool(found), {(a, b): verdict for a, b, verdict in found if b is not None and verdict}


class JSONArrayLength(Func):
    """Length of a JSON array, computed by the database (PostgreSQL jsonb or SQLite JSON1)."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="json_array_length", **extra)


def newest_snapshot_summaries(*, dataset: Dataset) -> list[RankingSnapshot]:
    """The newest snapshot of each subset × definition of ``dataset`` without its report and inputs (a
    report grows with the square of the methods), with ``n_methods`` and ``n_targets``: stored in the
    background (:class:`RankingStatus`), else computed by the database (the rankings index, issue 28)."""
    out = list(newest_snapshots(dataset=dataset).values())
    rows = RankingStatus.objects.filter(snapshot__in=[s.pk for s in out])
    stored = {pk: (m, t) for pk, m, t in rows.values_list("snapshot_id", "n_methods", "n_targets")}
    missing = RankingSnapshot.objects.filter(pk__in=[s.pk for s in out if s.pk not in stored])  # no row yet:
    stored.update((pk, (m, int(t or 0))) for pk, m, t in missing.values_list(  # measured in the report
        "pk", JSONArrayLength(KeyTransform("methods", "report")), KeyTextTransform("targets", "inputs")))
    for snap in out:
        snap.n_methods, snap.n_targets = stored.get(snap.pk, (None, 0))
    return out


def glance_order(rows: list[dict]) -> list[dict]:
    """Ranked rows in the ranking's own order — the rank the report stores for each (never recomputed here,
    so the home page agrees with the ranking page by construction) — tied ranks by mean per-target MCC on
    the targets that decided the place (highest first), then by name (issue 37: ties listed alphabetically
    kept the highest MCCs off the home page)."""

    def mcc(r: dict) -> float:
        value = r.get("decided_mcc")
        if value is None:
            value = (r.get("mean_mcc") or {}).get("mean")
        return -2.0 if value is None else float(value)

    return sorted(rows, key=lambda r: (r["rank"], -mcc(r), r["method"].lower()))


def rankings_at_a_glance(*, top: int = 5) -> list[dict]:
    """For each dataset, the newest snapshot of its first subset and definition with its top rows."""
    found = []
    for dataset in Dataset.objects.order_by("slug"):
        subset = dataset.subsets.first()
        if subset is None:
            continue
        for definition in subset.definitions()[:1]:
            # without the report and inputs: their parts are stored in the background (ranking_lives)
            snap = subset.rankings.filter(definition=definition).defer("report", "inputs").first()
            if snap is not None:
                found.append((dataset, subset, snap))
    live = ranking_lives([snap for _, _, snap in found])
    rows = ranking_rows_of([snap for _, _, snap in found])
    return [
        {
            "dataset": dataset,
            "subset": subset,
            "snapshot": snap,
            "rows": glance_order(ranked_rows(rows[snap.pk]))[:top],
            "common_targets": live[snap.pk]["common_targets_ranked"],
            "live": live[snap.pk],
        }
        for dataset, subset, snap in found
    ]




def settled_fields(snapshot: RankingSnapshot) -> dict:
    """Whether what is derived from ``snapshot`` is final: ``{"settled", "state", "settled_reasons",
    "settled_definition", "settled_definition_url"}`` (:func:`comparna.services.progress.ranking_state`, read
    through the page's 30-second cache so that a download costs what the page costs)."""
    return state_fields(ranking_live(snapshot)["state"])


def state_fields(state: dict) -> dict:
    """:func:`settled_fields` of a :func:`comparna.services.progress.ranking_state` result."""
    from django.urls import reverse

    from comparna.services.progress import SETTLED_DEFINITION

    return {
        "settled": bool(state["settled"]),
        "state": state["label"],
        "settled_reasons": list(state["reasons"]),
        "settled_definition": SETTLED_DEFINITION,
        "settled_definition_url": reverse("about") + "#provisional",
    }


def ranking_export(snapshot: RankingSnapshot, protocol: str = "target") -> dict:
    """A snapshot's ranking as plain data (the JSON download; the CSV has its ``methods``).

    ``rank`` is null for a method that is not ranked (only "?" verdicts); ``rank_low``/``rank_high`` its 95 %
    interval (family bootstrap); the numbers are named by their definitions
    (:mod:`comparna.services.pages.export_fields`: ``mean_mcc`` on the ``mean_mcc_n`` targets that decided
    its place, ``pooled_*_common`` over the common targets of the ranked methods, null for snapshots that
    predate them). ``settled`` says whether the ranking is final (else provisional).
    """
    view, shown = snapshot_view(snapshot, protocol)
    settled = settled_fields(snapshot)
    methods = []
    for r in ranking_rows(snapshot, shown):
        methods.append(
            {
                "rank": r["rank"] if r["ranked"] else None,
                "rank_low": r.get("rank_low") if r["ranked"] else None,
                "rank_high": r.get("rank_high") if r["ranked"] else None,
                "ranked": r["ranked"],
                "method": r["method"],
                "wins": r["wins"],
                "losses": r["losses"],
                "draws": r["draws"],
                "unknown": r["unknown"],
                **named_numbers(r),
                "targets_scored": r["coverage"]["scored"],
                "targets_total": r["coverage"]["total"],
                "protocol": shown,
                "settled": settled["settled"],
            }
        )
    methods.sort(key=lambda m: (not m["ranked"], m["rank"] or 0, m["method"]))
    report = snapshot.report
    return {
        "snapshot": snapshot.pk,
        "dataset": snapshot.dataset.slug,
        "subset": snapshot.subset.slug,
        "definition": snapshot.definition,
        "computed_at": snapshot.computed_at.isoformat(),
        **settled,
        "protocol": shown,
        "protocol_label": view.get("protocol_label"),
        "seed": snapshot.seed,
        "inputs_hash": snapshot.inputs_hash,
        "targets": snapshot.inputs.get("targets"),
        "clusters": report.get("clusters"),
        "common_targets": report.get("common_targets_ranked"),
        "methods": methods,
        "deprecated_fields": DEPRECATED_FIELDS,
        "verdicts": view.get("verdicts", {}),
        "p_values": view.get("p_values", {}),
        "p_adjusted": view.get("p_adjusted"),
        "pair_common_targets": report.get("common_targets", {}),
        "robustness_targets": report.get("robustness_targets"),
        "robustness": report.get("robustness"),
        "conventions": view.get("conventions", {}),
    }


def ranking_csv(snapshot: RankingSnapshot, protocol: str = "target") -> str:
    """The ranking table of a snapshot as CSV (:data:`EXPORT_COLUMNS`; empty cells for nulls); every row says
    its protocol and whether the ranking is settled."""
    buf = io.StringIO()
    w = safe_writer(buf, lineterminator="\n")
    w.writerow(EXPORT_COLUMNS)
    for m in ranking_export(snapshot, protocol)["methods"]:
        w.writerow([_cell(m[c]) for c in EXPORT_COLUMNS])
    return buf.getvalue()


def _cell(value) -> str:
    if value is None:
        return ""
    return f"{value:.6f}" if isinstance(value, float) else str(value)
