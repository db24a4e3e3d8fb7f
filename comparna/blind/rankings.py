"""Blind rankings: committed predictions only, per week and over all weeks.

The engine, its report and the pooled scores are the ones of every other ranking
(:func:`comparna.services.rankings.compute_report`); what differs is the input — for each method, its
*committed* prediction on each scored target of the scope (whatever version made it: a version is what was
frozen that week), and every scored target as a column (a method without a committed prediction there has
none, which the robustness ranking counts as no pairs). Late predictions never enter.

The cumulative ranking grows week after week; each stored cumulative ranking is a look of the group-
sequential test (Lan-DeMets O'Brien-Fleming boundary, :mod:`comparna.rna.sequential`) of every method pair,
over the planned ``BLIND_PLANNED_TARGETS`` targets. Only weeks whose commitment was published before their
release count.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from comparna.blind.models import BlindRanking, BlindScore, BlindTarget, BlindWeek
from comparna.blind.scoring import DEFINITIONS, reference_in_window, window_positions
from comparna.rna.ranking import COUNT_FIELDS, CountsTable
from comparna.services.rankings import VERDICT_PROTOCOL, compute_report
from comparna.services.uncertainty import cluster_labels, pair_history, sequential_verdicts
from predictors.models import public_prediction_q

CUMULATIVE = "cumulative"


def scope_targets(scope: str) -> list[BlindTarget]:
    qs = BlindTarget.objects.filter(state=BlindTarget.State.SCORED).select_related("target", "week")
    if scope == CUMULATIVE:
        qs = qs.filter(week__committed_at__isnull=False)
        blind = [b for b in qs if b.week.blind]
    else:
        blind = [b for b in qs.filter(week__release_date=scope) if b.week.blind]
    return sorted(blind, key=lambda b: b.target.source_id)


def build_counts_table(*, scope: str, definition: str) -> tuple[CountsTable, dict]:
    targets = scope_targets(scope)
    index = {b.pk: k for k, b in enumerate(targets)}
    rows = (
        BlindScore.objects.filter(
            definition=definition, frozen__committed=True, frozen__blind_target_id__in=list(index)
        )
        # what counts publicly (issue 36): a row frozen before the rule held may be of a version staff never
        # approved or a self-reported upload; a committed row whose prediction was deleted since still counts
        .filter(Q(frozen__prediction__isnull=True) | public_prediction_q("frozen__prediction__"))
        .select_related("frozen")
        .order_by("frozen__method_name", "frozen__blind_target_id", "frozen__pk")
    )
    methods: dict[str, int] = {}
    versions: dict[str, set[str]] = {}
    cells: dict[tuple[int, int], list[int]] = {}
    for score in rows:
        f = score.frozen
        m = methods.setdefault(f.method_name, len(methods))
        versions.setdefault(f.method_name, set()).add(f"{f.method_version} ({f.fingerprint[:12]})")
        # two committed versions of one method on a target (a new version mid-week): the later one counts
        cells[(m, index[f.blind_target_id])] = [int(score.values[c]) for c in COUNT_FIELDS]
    counts = np.zeros((len(methods), len(targets), len(COUNT_FIELDS)), dtype=np.int64)
    present = np.zeros((len(methods), len(targets)), dtype=bool)
    for (m, t), values in cells.items():
        counts[m, t] = values
        present[m, t] = True
    table = CountsTable(tuple(methods), tuple(b.target.source_id for b in targets), counts, present)
    windows = [len(window_positions(b)) for b in targets]
    labels = cluster_labels((b.target_id, b.target.source_id) for b in targets)
    identity = {
        "dataset": "pdb-blind",
        "scope": scope,
        "definition": definition,
        "verdict_protocol": VERDICT_PROTOCOL,  # a pre-issue-27 ranking is not reused as a target-level one
        "targets": len(targets),
        "weeks": sorted({str(b.week.release_date) for b in targets}),
        "methods": {name: sorted(v) for name, v in versions.items()},
        "counts_sha256": hashlib.sha256(counts.tobytes() + present.tobytes()).hexdigest(),
        "reference_pairs": [len(reference_in_window(b, definition).pairs) for b in targets],
        "candidate_pairs": [w * (w - 1) // 2 for w in windows],
        "clusters": [labels[b.target_id] for b in targets],
    }
    return table, identity


def rank_scope(*, scope: str, definition: str, seed: int | None = None) -> tuple[BlindRanking, bool]:
    """Store a blind ranking of ``scope`` unless one with identical inputs exists. Returns (ranking, new)."""
    seed = settings.RANKING_SEED if seed is None else seed
    table, identity = build_counts_table(scope=scope, definition=definition)
    key = hashlib.sha256(json.dumps({**identity, "seed": seed}, sort_keys=True).encode()).hexdigest()
    existing = BlindRanking.objects.filter(scope=scope, definition=definition, inputs_hash=key).first()
    if existing is not None:
        return existing, False
    report = compute_report(table, identity, seed=seed)
    if scope == CUMULATIVE:
        history = pair_history(
            BlindRanking.objects.filter(scope=scope, definition=definition).order_by("computed_at", "pk")
        )
        report["sequential"] = sequential_verdicts(
            report, history=history, planned=settings.BLIND_PLANNED_TARGETS
        )
    inputs = {**identity, "seed": seed, "conventions": report.get("conventions", {})}
    try:
        with transaction.atomic():
            ranking = BlindRanking.objects.create(
                scope=scope, definition=definition, inputs_hash=key, inputs=inputs, report=report
            )
    except IntegrityError:
        return BlindRanking.objects.get(scope=scope, definition=definition, inputs_hash=key), False
    return ranking, True


def rank_blind() -> list[tuple[BlindRanking, bool]]:
    """Rank every week with scored targets and the cumulative set, under both definitions."""
    scopes = [
        str(d)
        for d in BlindWeek.objects.filter(targets__state=BlindTarget.State.SCORED)
        .values_list("release_date", flat=True)
        .distinct()
        .order_by("release_date")
    ]
    out = []
    for scope in [*scopes, CUMULATIVE]:
        for definition in DEFINITIONS:
            if scope_targets(scope):
                out.append(rank_scope(scope=scope, definition=definition))
    return out


def latest(scope: str, definition: str) -> BlindRanking | None:
    return BlindRanking.objects.filter(scope=scope, definition=definition).first()
