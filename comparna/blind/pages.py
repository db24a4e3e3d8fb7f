"""What the blind-track pages show: weeks, one week (targets, who predicted what, commitment, verification,
ranking), the targets awaiting release, and the cumulative ranking with its sequential verdicts."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q

from comparna import clock
from comparna.blind.freezing import OPEN_STATES, verify_week
from comparna.blind.models import BlindRanking, BlindScore, BlindTarget, BlindWeek, FrozenPrediction
from comparna.blind.rankings import CUMULATIVE
from comparna.blind.timeline import upcoming_release, week_times
from predictors.models import Prediction

DEFINITIONS = ("standard", "extended")


def ranking_rows(ranking: BlindRanking | None) -> list[dict]:
    if ranking is None:
        return []
    rows = []
    for row in ranking.report.get("methods", []):
        ci = row.get("mean_mcc_ci") or [None, None]
        rows.append({**row, "ci_low": ci[0], "ci_high": ci[1]})
    return sorted(rows, key=lambda r: (r["rank"], r["method"]))


def sequential_rows(ranking: BlindRanking | None) -> list[dict]:
    """One row per method pair with a group-sequential verdict (cumulative ranking)."""
    if ranking is None:
        return []
    out = []
    for a, row in sorted(ranking.report.get("sequential", {}).items()):
        for b, verdict in sorted(row.items()):
            if verdict:
                out.append({"a": a, "b": b, **verdict})
    return out


def week_rows() -> list[dict]:
    weeks = BlindWeek.objects.annotate(
        n_targets=Count("targets", distinct=True),
        n_scored=Count("targets", filter=Q(targets__state=BlindTarget.State.SCORED), distinct=True),
        n_closed=Count("targets", filter=Q(targets__state=BlindTarget.State.CLOSED), distinct=True),
    ).order_by("-release_date")
    committed = dict(
        FrozenPrediction.objects.filter(committed=True)
        .values_list("blind_target__week")
        .annotate(n=Count("id"))
        .values_list("blind_target__week", "n")
    )
    return [{"week": w, "committed_predictions": committed.get(w.pk, 0)} for w in weeks]


def index_context(definition: str) -> dict:
    now = clock.now()
    upcoming = week_times(upcoming_release(now))
    cumulative = BlindRanking.objects.filter(scope=CUMULATIVE, definition=definition).first()
    return {
        "now": now,
        "clock": clock.clock(),
        "upcoming": upcoming,
        "weeks": week_rows(),
        "cumulative": cumulative,
        "rows": ranking_rows(cumulative),
        "sequential": sequential_rows(cumulative),
        "definition": definition,
        "definitions": DEFINITIONS,
    }


def week_context(week: BlindWeek, definition: str) -> dict:
    now = clock.now()
    released = week.release_at <= now
    targets = list(week.targets.select_related("target").order_by("target__source_id"))
    predictions = list(
        Prediction.objects.public()
        .filter(target__blind__week=week)
        .select_related("method_version__method")
        .order_by("method_version__method__name", "target_id", "pk")
    )
    frozen = {
        f.prediction_id: f for f in FrozenPrediction.objects.filter(blind_target__week=week)
    }
    week_scores = BlindScore.objects.filter(frozen__blind_target__week=week, definition=definition)
    scores = {s.frozen.prediction_id: s.values for s in week_scores.select_related("frozen")}
    cells: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for p in predictions:
        f = frozen.get(p.pk)
        if p.status in OPEN_STATES:
            state, label = "pending", p.get_status_display()
        elif f is None:
            state, label = "finished", "finished, not frozen yet"
        elif f.committed:
            state, label = "committed", "committed"
        else:
            state, label = "late", "late (not blind)"
        values = scores.get(p.pk)
        cells[p.method_version.method.name][p.target_id].append(
            {
                "state": state,
                "label": label,
                "status": p.status,
                "version": p.method_version.version,
                "mcc": values.get("mcc") if values else None,
                "sha256": f.sha256 if f else "",
            }
        )
    methods = sorted(cells)
    matrix = [
        {"method": m, "cells": [cells[m].get(b.target_id, []) for b in targets]} for m in methods
    ]
    ranking = BlindRanking.objects.filter(scope=str(week.release_date), definition=definition).first()
    return {
        "week": week,
        "now": now,
        "clock": clock.clock(),
        "released": released,
        "runs": list(week.runs.order_by("attempt")),
        "targets": targets,
        "matrix": matrix,
        "skipped": week.summary.get("skipped", []),
        "verification": verify_week(week) if week.committed else None,
        "ranking": ranking,
        "rows": ranking_rows(ranking),
        "definition": definition,
        "definitions": DEFINITIONS,
        "n_committed": sum(1 for f in frozen.values() if f.committed),
        "n_late": sum(1 for f in frozen.values() if f.late),
    }


def awaiting_context() -> dict:
    """Targets predicted blind whose structure is not out yet (open weeks, held entries)."""
    now = clock.now()
    targets = list(
        BlindTarget.objects.filter(
            Q(state=BlindTarget.State.HELD) | Q(state=BlindTarget.State.OPEN, week__release_at__gt=now)
        )
        .select_related("target", "week")
        .annotate(
            n_predictions=Count("target__predictions", distinct=True),
            n_frozen=Count("frozen", distinct=True),
        )
        .order_by("week__release_date", "target__source_id")
    )
    return {"now": now, "clock": clock.clock(), "targets": targets}
