"""Blind scores: each frozen prediction against its target's released chain, on the observed residues.

The structure scored is the one in the frozen content (what was committed), never the current row: a change
after the commitment cannot change a score (and :func:`comparna.blind.freezing.verify_week` reports it).
Counts and metrics are the registry's (:mod:`comparna.rna.metric_registry`), as for every other score.
"""

from __future__ import annotations

import logging

from django.db import transaction

from comparna.blind.models import BlindScore, BlindTarget, FrozenPrediction
from comparna.rna.canonical import structure_from_text
from comparna.rna.metric_registry import scores_of
from comparna.rna.metrics import count_pairs
from comparna.rna.seqmap import restrict
from comparna.rna.structure import StructureFormatError

log = logging.getLogger(__name__)

DEFINITIONS = ("standard", "extended")


def window_positions(blind: BlindTarget) -> list[int]:
    return [p for first, last in blind.window for p in range(first, last + 1)]


def reference_in_window(blind: BlindTarget, definition: str):
    return restrict([tuple(p) for p in blind.reference.get(definition, [])], window_positions(blind))


def score_frozen(frozen: FrozenPrediction, blind: BlindTarget) -> list[BlindScore]:
    """Store the scores of one frozen ``ok`` prediction under every definition (idempotent)."""
    if frozen.status != "ok" or blind.state != BlindTarget.State.SCORED:
        return []
    window = window_positions(blind)
    try:
        predicted = structure_from_text(blind.target.length, frozen.content.get("pairs", ""))
    except StructureFormatError as exc:
        log.warning("frozen prediction %s: unreadable pairs (%s); not scored", frozen.pk, exc)
        return []
    prediction = restrict(predicted.pairs, window)
    stored = []
    for definition in DEFINITIONS:
        if definition not in blind.reference:
            continue
        reference = reference_in_window(blind, definition)
        counts = count_pairs(reference, prediction)
        values = {**counts.as_dict(), **scores_of(counts, reference, prediction)}
        row, _ = BlindScore.objects.update_or_create(
            frozen=frozen, definition=definition, defaults={"values": values}
        )
        stored.append(row)
    return stored


@transaction.atomic
def score_target(blind: BlindTarget) -> int:
    """Score every frozen prediction of a linked target; returns how many were scored."""
    blind = BlindTarget.objects.select_related("target").get(pk=blind.pk)
    n = 0
    for frozen in blind.frozen.all():
        n += bool(score_frozen(frozen, blind))
    return n


def score_unscored() -> int:
    """Score frozen predictions of linked targets that have no score yet (e.g. late ones frozen after the
    link). Returns how many were scored."""
    todo = (
        FrozenPrediction.objects.filter(
            status="ok", scores__isnull=True, blind_target__state=BlindTarget.State.SCORED
        )
        .select_related("blind_target__target")
        .distinct()
    )
    n = 0
    for frozen in todo:
        n += bool(score_frozen(frozen, frozen.blind_target))
    return n
