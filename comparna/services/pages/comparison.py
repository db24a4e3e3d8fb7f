"""The comparison page of two methods in one subset × definition: pooled counts, the ranking engine's test
for the pair, paired statistics with power, per-family and per-length CIs, a scatter plot and the CSV.

The group-sequential look of a weekly-growing dataset is in
:mod:`comparna.services.pages.comparison_sequential` (its two functions are imported here too)."""

from __future__ import annotations

import io
from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np

from comparna import pipeline
from comparna.csv_cells import safe_writer
from comparna.models import RankingSnapshot
from comparna.rna import statistics, thresholds
from comparna.rna.clustered import pooled_mcc_difference
from comparna.rna.metric_registry import pooled_scores
from comparna.rna.metrics import PairCounts
from comparna.rna.ranking import (
    ALPHA,
    MIN_COMMON,
    CountsTable,
    pair_replicate_mccs,
    target_conventions,
    target_level_ranking,
    wilcoxon_pvalues,
)
from comparna.rna.ranking import COUNT_FIELDS as ENGINE_COUNTS
from comparna.rna.target_verdicts import subset_floor
from comparna.services.pages.common import (
    COUNT_FIELDS,
    LENGTH_BINS,
    SCORE_FIELDS,
    TargetScore,
    cache_get,
    cache_set,
    ci_dict,
    current_scores,
    length_bin,
    report_value,
    report_values,
)
from comparna.services.pages.comparison_sequential import sequential_look, sequential_paired_verdict
from comparna.services.pages.figures import comparison_scatter_figure, group_mcc_figure
from comparna.services.pages.snapshot_data import scored_counts, snapshot_scores
from comparna.services.uncertainty import cluster_labels
from predictors.models import Method


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
    #: mean MCC with 95 % CIs of both methods: over all common targets and per length bin / per family
    means_json: str | None = None
    families_json: str | None = None
    notes: list[str] = field(default_factory=list)
    equivalence: dict | None = None
    #: "snapshot": the snapshot's targets and method versions; "live": current scores (older snapshots)
    source: str = "live"
    #: targets each method ("a", "b") scored in the data compared (for the empty state)
    scored: dict = field(default_factory=dict)
    #: the one verdict of the page: CompaRNA's ("+", "-", "=", "?") and why it may differ from the snapshot
    verdict: str = "?"
    verdict_note: str | None = None


def pair_test(
    *,
    targets: list[str],
    scores: list[TargetScore],
    a: str,
    b: str,
    seed: int,
    clusters: dict[str, str] | None = None,
    pairs_tested: int = 1,
) -> dict:
    """The ranking's test for one pair: the target-level clustered Wilcoxon signed-rank test (primary) and,
    labelled, the CompaRNA 2013 protocol's test with the snapshot's seed.

    Builds the two-method counts table over ``targets`` (the subset's, by source id: the engine's order) from
    ``scores`` (the two methods' scores of the data compared), method names sorted as the engine sorts them,
    so the 2013 replicate draws are those the ranking made for this pair. ``clusters`` maps a source id to
    its family (:func:`comparna.services.uncertainty.cluster_labels`). The primary verdict here is adjusted
    by Bonferroni over ``pairs_tested`` (the snapshot's tested pairs: the bound Holm's adjustment of the
    ranking never exceeds); the page shows the snapshot's own Holm verdict when it has one.
    """
    names = sorted([a, b])
    t_ix = {sid: k for k, sid in enumerate(targets)}
    counts = np.zeros((2, len(targets), len(ENGINE_COUNTS)), dtype=np.int64)
    present = np.zeros((2, len(targets)), dtype=bool)
    for s in scores:
        if s.method not in names or s.source_id not in t_ix:
            continue
        m = names.index(s.method)
        k = t_ix[s.source_id]
        counts[m, k] = [s.counts[f] for f in ENGINE_COUNTS]
        present[m, k] = True
    table = CountsTable(tuple(names), tuple(targets), counts, present)
    labels = [(clusters or {}).get(t) or f"seq:{t}" for t in targets]
    target = target_level_ranking(table, clusters=labels, seed=seed)
    n = int(target.common[0, 1])
    p_raw = target.p_values[0, 1]
    out = {
        "n_common": n,
        "seed": seed,
        "alpha": ALPHA,
        "min_common": MIN_COMMON,
        "margin": thresholds.EQUIVALENCE_DELTA,
        "delta": thresholds.EQUIVALENCE_DELTA,
        "method": target_conventions()["test"],
        "clusters": int(target.clusters[0, 1]),
        "pairs_tested": pairs_tested,
    }
    mcc_0, mcc_1, _ = pair_replicate_mccs(table, 0, 1, seed)
    old = {"label": thresholds.PROTOCOL_2013_LABEL, "pvalue": None, "verdict": "?"}
    if n < MIN_COMMON:
        return {**out, "pvalue": None, "pvalue_adjusted": None, "interval": None, "hodges_lehmann": None,
                "to_decide": None, "verdict": "?", "reason": "few", "protocol_2013": old}
    with np.errstate(invalid="ignore"):
        p13 = float(wilcoxon_pvalues(mcc_0[None, :], mcc_1[None, :])[0])
    diff13 = float((mcc_0 - mcc_1).mean())
    by_name = {names[0]: mcc_0, names[1]: mcc_1}
    v13 = "="
    if not np.isnan(p13) and p13 < ALPHA and diff13 != 0:
        v13 = "+" if (names[0] if diff13 > 0 else names[1]) == a else "-"
    old.update(pvalue=None if np.isnan(p13) else p13, verdict=v13,
               mean_difference=float((by_name[a] - by_name[b]).mean()),
               method="two-sided Wilcoxon signed-rank test on 40 paired MCCs of random 90 % subsamples")
    adjusted = None if np.isnan(p_raw) else min(1.0, float(p_raw) * max(1, pairs_tested))
    diff = float(target.mean_difference[0, 1])  # names[0] − names[1]
    sign = 1.0 if names[0] == a else -1.0
    # one pair alone: the engine decides on the raw p; here the p is adjusted over the snapshot's tested pairs
    # (its floor too: pairs_tested·2/2^C), then the same rules (SCIENCE.md §5): a win on the statistic's
    # side unless the mean disagrees, "=" only by the 90 % clustered interval inside ±δ, else "?"
    engine_verdict, engine_reason = str(target.verdicts[0, 1]), str(target.reasons[0, 1])
    floor = subset_floor(families=int(target.clusters[0, 1]), pairs=max(1, pairs_tested))
    if floor["fires"]:
        verdict, reason = "?", "floor"
    elif adjusted is not None and adjusted < ALPHA and engine_verdict in ("+", "-"):
        verdict, reason = ("+" if sign * diff > 0 else "-"), ""
    elif engine_verdict == "=":
        verdict, reason = "=", ""
    else:
        kept = engine_reason in ("direction", "undecided", "floor")
        verdict, reason = "?", engine_reason if kept else "open"
    lo, hi = float(target.interval_low[0, 1]), float(target.interval_high[0, 1])
    interval = sorted((sign * lo, sign * hi)) if np.isfinite(lo) and np.isfinite(hi) else None
    shift = [float(target.hl[0, 1]), float(target.hl_low[0, 1]), float(target.hl_high[0, 1])]
    hl = None if not np.isfinite(shift[0]) else [sign * shift[0], *sorted((sign * shift[1], sign * shift[2]))]
    more = (int(target.needed_targets[0, 1]), int(target.needed_families[0, 1]))
    return {
        **out,
        "pvalue": None if np.isnan(p_raw) else float(p_raw),
        "pvalue_adjusted": adjusted,
        "interval": interval,
        "hodges_lehmann": hl,
        "to_decide": list(more) if reason == "open" and more[0] >= 0 else None,
        "floor": floor,
        "verdict": verdict,
        "reason": reason,
        "mean_difference": sign * diff,
        "protocol_2013": old,
        "replicates_a": by_name[a].tolist(),
        "replicates_b": by_name[b].tolist(),
    }


#: Common targets up to which the comparison page computes a comparison in the request; above, a background
#: task computes it (its bootstraps grow with the common targets) and the page says it is being computed.
REQUEST_LIMIT = 300
#: How long a computed comparison is kept: one on a snapshot's own data does not change (a re-scoring of
#: its method versions aside), one on live data is recomputed after 10 minutes.
KEEP_SNAPSHOT_S = 7 * 86400
KEEP_LIVE_S = 600


def _key(snapshot: RankingSnapshot, a: Method, b: Method) -> str:
    return f"compare:{snapshot.pk}:{a.pk}:{b.pk}"


def expected_common(snapshot: RankingSnapshot, a: str, b: str) -> int:
    """The common targets of ``a`` and ``b`` in the snapshot's matrix (0 when it does not say)."""
    return int(report_value(snapshot, "common_targets", a, b) or 0)


#: The comparison page's per-target table shows at most this many rows (those where the two methods differ
#: most); the CSV and the zip have them all (6 745 rows at 20 000 targets made the page a megabyte).
PER_TARGET_ROWS = 200


def per_target_rows(rows: list[dict]) -> list[dict]:
    """All the comparison's rows when at most :data:`PER_TARGET_ROWS`, else the rows with the largest
    |ΔMCC| first (a target without an MCC last)."""
    if len(rows) <= PER_TARGET_ROWS:
        return rows

    def gap(r: dict) -> float:
        value = abs(r["a"].mcc - r["b"].mcc)
        return -1.0 if np.isnan(value) else value

    return sorted(rows, key=lambda r: (-gap(r), r["source_id"]))[:PER_TARGET_ROWS]


def ready_comparison(
    *, snapshot: RankingSnapshot, a: Method, b: Method, page: bool = False
) -> Comparison | None:
    """The comparison when it is small enough to compute now or was computed already; None when a background
    task is computing it (queued here on the first request: :func:`comparna.tasks.compare_methods_task`).
    ``page``: the page's copy will do (its rows only those the page shows, :func:`per_target_rows`: a
    fraction of the whole one's loading time from the cache)."""
    done = cache_get(_key(snapshot, a, b) + ":page") if page else None
    if done is None:
        done = cache_get(_key(snapshot, a, b))
    if done is not None:
        return done
    if expected_common(snapshot, a.name, b.name) <= REQUEST_LIMIT:
        return compare_methods(snapshot=snapshot, a=a, b=b)
    from django.core.cache import cache

    from comparna.services.pages.common import CACHE_PREFIX

    if cache.add(f"{CACHE_PREFIX}:{_key(snapshot, a, b)}:queued", 1, 600):  # queued once per 10 minutes
        # sent by name (comparna.pipeline): a broker that cannot be reached is logged there, and the page
        # queues the pair again after 10 minutes
        pipeline.comparison_requested(snapshot_id=snapshot.pk, a_id=a.pk, b_id=b.pk)
    return None


def compare_methods(*, snapshot: RankingSnapshot, a: Method, b: Method) -> Comparison:
    """Pooled counts, the engine's test, paired statistics and per-family / per-length CIs of two methods."""

    def compute() -> Comparison:
        scores, targets, source = comparison_scores(snapshot, a.name, b.name)
        # a snapshot's scores here are the common targets': each method's own count is in the report
        counts = (
            scored_counts(snapshot, [a.name, b.name])
            if source == "snapshot"
            else {m: sum(s.method == m for s in scores) for m in (a.name, b.name)}
        )
        scored = {"a": counts[a.name], "b": counts[b.name]}
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
                    pooled_scores(pooled),
                    ci_dict(mccs, seed=seed),
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
        labels_of = cluster_labels((r["target_id"], r["source_id"]) for r in rows)
        clusters = [labels_of[r["target_id"]] for r in rows]
        for r, label in zip(rows, clusters, strict=True):
            r["cluster"] = label
        paired = None
        notes = []
        if len(rows) >= 3 and np.var(mcc_a - mcc_b) > 0:
            pc = statistics.compare_paired(mcc_a, mcc_b, seed=seed)
            pcc = statistics.compare_paired(mcc_a, mcc_b, seed=seed, clusters=clusters)
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
                # the same statistics with whole Rfam families / sequence clusters as the unit
                "clustered": {
                    "clusters": pcc.clusters,
                    "t": pcc.t_test.statistic,
                    "df": pcc.t_test.df,
                    "t_pvalue_text": statistics.format_p_value(pcc.t_test.pvalue),
                    "low": pcc.bootstrap.interval.low,
                    "high": pcc.bootstrap.interval.high,
                    "bootstrap_pvalue_text": pcc.bootstrap.pvalue_text,
                    "power": pcc.power,
                    "n_required": pcc.n_required,
                    "design_effect": pcc.design_effect,
                    "verdict": pcc.verdict,
                },
                "unadjusted_verdict": pc.verdict,
                "sequential": sequential_look(
                    snapshot=snapshot, a=a.name, b=b.name, current=(pc.t_test.statistic, pc.n)
                ),
            }
            if paired["sequential"] is not None:
                # on a weekly-growing dataset the group-sequential verdict is the verdict; the unadjusted
                # test stays visible as secondary information
                paired["verdict"] = sequential_paired_verdict(paired["sequential"]["verdict"], pc.verdict)
        else:
            notes.append("Paired statistics need at least 3 common targets with differing per-target MCCs.")
        by_family = _grouped_cis(rows, key=lambda r: r["rna_class"], seed=seed)
        by_length = _grouped_cis(
            rows,
            key=lambda r: length_bin(r["length"]),
            seed=seed,
            order=[label for _, _, label in LENGTH_BINS],
        )
        report = snapshot.report
        target_view = report.get("protocol") == "target"
        common_counts = report.get("common_targets", {})
        tested = sum(
            1 for x, row in common_counts.items() for y, k in row.items() if x < y and k >= MIN_COMMON
        )
        test = pair_test(
            targets=targets, scores=scores, a=a.name, b=b.name, seed=seed,
            clusters={r["source_id"]: r["cluster"] for r in rows}, pairs_tested=tested,
        )
        # the published verdict: the snapshot's target-level one (Holm across its matrix); a snapshot stored
        # before issue 27 holds only the 2013 protocol's verdicts, which are not this page's verdict
        verdict = report.get("verdicts", {}).get(a.name, {}).get(b.name) if target_view else None
        if target_view:
            test["pvalue_adjusted_snapshot"] = report.get("p_adjusted", {}).get(a.name, {}).get(b.name)
            test["reason"] = report.get("verdict_reasons", {}).get(a.name, {}).get(b.name, test["reason"])
        primary, primary_note = test["verdict"], None
        stored_p = report.get("p_values", {}).get(a.name, {}).get(b.name) if target_view else None
        if source == "snapshot" and verdict is not None:
            # the snapshot's verdict is the one published; recomputing on its targets differs only when the
            # scores of its method versions were re-scored since
            primary = verdict
            recomputed = test["pvalue"]
            if stored_p is not None and recomputed is not None and not np.isclose(stored_p, recomputed):
                primary_note = (
                    f"recomputed on the same targets the test now gives p = {test['pvalue']:.3g} "
                    f"(published {stored_p:.3g}): these method versions were re-scored after the snapshot"
                )
        elif verdict is not None and verdict != test["verdict"]:
            primary_note = f"the published snapshot #{snapshot.pk} says “{verdict}” (computed on other data)"
        elif not target_view:
            primary_note = (
                f"snapshot #{snapshot.pk} predates the target-level verdicts; this verdict is recomputed "
                f"here, Bonferroni-adjusted over its {tested} tested pairs"
            )
        equivalence = None
        if rows:
            fields = ("tp", "fn", "fp", "fp_compatible", "tn")
            counts_a = np.array([[r["a"].counts[f] for f in fields] for r in rows])
            counts_b = np.array([[r["b"].counts[f] for f in fields] for r in rows])
            equivalence = pooled_mcc_difference(counts_a, counts_b, clusters, seed=seed).as_dict()
        comp = Comparison(
            sides[0], sides[1], len(rows), rows, verdict, test, paired, by_family, by_length, notes=notes,
            equivalence=equivalence,
            source=source,
            scored=scored,
            verdict=primary,
            verdict_note=primary_note,
        )
        names = (comp.a.name, comp.b.name)
        comp.scatter_json = comparison_scatter_figure(comp.rows, names)
        if rows:
            overall = {
                "group": "all common targets",
                "n": len(rows),
                "a": ci_dict([r["a"].mcc for r in rows], seed=seed),
                "b": ci_dict([r["b"].mcc for r in rows], seed=seed),
            }
            comp.means_json = group_mcc_figure([overall, *by_length], names, axis="targets")
            comp.families_json = group_mcc_figure(by_family, names, axis="RNA family")
        return comp

    done = cache_get(_key(snapshot, a, b))
    if done is None:
        done = compute()
        keep = KEEP_SNAPSHOT_S if done.source == "snapshot" else KEEP_LIVE_S
        cache_set(_key(snapshot, a, b), done, keep)
        cache_set(_key(snapshot, a, b) + ":page", replace(done, rows=per_target_rows(done.rows)), keep)
    return done


def comparison_scores(
    snapshot: RankingSnapshot, a: str, b: str
) -> tuple[list[TargetScore], list[str], str]:
    """The two methods' scores to compare, the targets in the engine's order, and where they come from.

    A snapshot that stores its scored target sets (:mod:`comparna.services.ranking_scope`) gives the
    ``"snapshot"`` data: the scores of the method versions it ranked, on the targets each had scored when
    it was computed — so the common targets are those of its matrix. An older snapshot gives ``"live"``
    data: the current versions' current scores.
    """
    scores = snapshot_scores(snapshot, [a, b], common_only=True)
    if scores is None:
        scores = current_scores(definition=snapshot.definition, subset=snapshot.subset, methods=[a, b])
        targets = list(snapshot.subset.targets.order_by("source_id").values_list("source_id", flat=True))
        return scores, targets, "live"
    return scores, list(report_values(snapshot, ("target_sources",))[0]), "snapshot"


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
            "a": ci_dict([r["a"].mcc for r in groups[g]], seed=seed),
            "b": ci_dict([r["b"].mcc for r in groups[g]], seed=seed),
        }
        for g in labels
    ]


def comparison_csv(comp: Comparison) -> str:
    """The per-target data behind a comparison: counts and scores of both methods on every common target."""
    buf = io.StringIO()
    w = safe_writer(buf, lineterminator="\n")
    cols = [*COUNT_FIELDS, *SCORE_FIELDS]
    w.writerow(["target", "length", "rna_class", *(f"a_{c}" for c in cols), *(f"b_{c}" for c in cols)])
    for r in comp.rows:
        vals = []
        for key in ("a", "b"):
            s = r[key]
            vals += [s.counts[c] for c in COUNT_FIELDS] + [f"{getattr(s, c):.6f}" for c in SCORE_FIELDS]
        w.writerow([r["source_id"], r["length"], r["rna_class"], *vals])
    return buf.getvalue()
