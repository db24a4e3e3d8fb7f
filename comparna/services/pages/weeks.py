"""The weekly PDB set week by week (issue 29, as CAMEO shows 3D predictions): which targets each release
brought, and every public method's score on each of them.

Small by construction: one week holds the chains of one Wednesday's release (tens of targets), so a page
reads those targets' scores only, never the whole set.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db.models import Count

from comparna.models import Dataset, Score, Target
from predictors.models import Prediction


def pdb_datasets():
    return Dataset.objects.filter(kind=Dataset.Kind.PDB).order_by("slug")


def release_weeks(*, dataset: Dataset, limit: int = 104) -> list[dict]:
    """The newest ``limit`` release days of ``dataset`` with how many targets each brought."""
    return list(
        Target.objects.filter(dataset=dataset, release_date__isnull=False)
        .values("release_date")
        .annotate(targets=Count("id"))
        .order_by("-release_date")[:limit]
    )


def week_table(*, dataset: Dataset, day: dt.date, definition: str) -> dict:
    """Every target released on ``day`` and every public method's MCC on it (or the outcome when it has no
    score: failed, too long, still queued ...), methods ordered by their mean MCC over the week's targets
    they scored (the week's own small league table; the rankings are the statistically tested ones)."""
    targets = list(
        Target.objects.filter(dataset=dataset, release_date=day).order_by("source_id")
    )
    ids = [t.pk for t in targets]
    mcc: dict[str, dict[int, float]] = defaultdict(dict)
    for name, target_id, value in (
        Score.objects.current()
        .filter(definition=definition, prediction__target_id__in=ids)
        .values_list("prediction__method_version__method__name", "prediction__target_id", "mcc")
    ):
        mcc[name][target_id] = value
    outcome: dict[str, dict[int, str]] = defaultdict(dict)
    for name, target_id, status in (
        Prediction.objects.public()
        .filter(target_id__in=ids, method_version__is_current=True, method_version__method__active=True)
        .exclude(status=Prediction.Status.OK)
        .values_list("method_version__method__name", "target_id", "status")
    ):
        outcome[name][target_id] = Prediction.Status(status).label
    rows = []
    for name in set(mcc) | set(outcome):
        scores = mcc.get(name, {})
        states = outcome.get(name, {})
        cells = [
            {"mcc": scores.get(t.pk), "outcome": "" if t.pk in scores else states.get(t.pk, "no prediction")}
            for t in targets
        ]
        mean = sum(scores.values()) / len(scores) if scores else None
        rows.append({"method": name, "cells": cells, "scored": len(scores), "mean": mean})
    rows.sort(key=lambda r: (r["mean"] is None, -(r["mean"] or 0.0), r["method"].lower()))
    return {"targets": targets, "rows": rows, "definition": definition, "day": day}
