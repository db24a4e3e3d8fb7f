"""Bulk re-scoring of stored predictions against the current references (issue 19 item 3).

After a reference changes (a re-annotation, a corrected entry, a new pair definition), every stored score of
the dataset is recomputed from the stored texts: counts and the four scores with the vectorised batch scorer
(:func:`comparna.rna.metrics_batch.score_texts`, equal to :func:`comparna.rna.metrics.count_pairs` and
bit-identical in its scores), the WL score per comparison. A row is written only when a value differs, so a
second run changes nothing (idempotent) and says so. Targets are processed in blocks, each in one
transaction: an interrupted run leaves every block either fully re-scored or untouched, and running again
completes it. A prediction whose stored structure cannot be read (length mismatch, malformed text) is
reported and its old scores kept; it never stops the others.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction

from comparna.models import Dataset, ReferenceStructure, Score, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.metric_registry import COUNT_FIELDS, METRICS
from comparna.rna.metric_registry import STORED_FIELDS as SCORE_FIELDS
from comparna.rna.metrics import convention
from comparna.rna.metrics_batch import score_texts
from comparna.rna.structure import StructureFormatError
from predictors.models import Prediction

#: Targets per transaction.
BLOCK_TARGETS = 200

Progress = Callable[[int, int], None]


@dataclass
class RescoreReport:
    """What a re-scoring run did."""

    dataset: str
    targets: int = 0
    predictions: int = 0
    compared: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    errors: list[str] = field(default_factory=list)
    convention: str = convention()

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in (
            "dataset", "targets", "predictions", "compared", "created", "updated", "unchanged", "deleted",
            "errors", "convention")}


def rescore_dataset(
    *,
    dataset: Dataset,
    definitions: Iterable[str] | None = None,
    progress: Progress | None = None,
    block: int = BLOCK_TARGETS,
) -> RescoreReport:
    """Re-score every ``ok`` prediction of ``dataset`` against its target's current references.

    Parameters
    ----------
    dataset : Dataset
    definitions : iterable of str, optional
        Pair definitions to re-score (default: every definition with a stored reference). Scores of a
        definition whose reference no longer exists for the target are deleted.
    progress : callable(done_targets, total_targets), optional
    block : int
        Targets per transaction.
    """
    wanted = None if definitions is None else set(definitions)
    target_ids = list(Target.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    report = RescoreReport(dataset.slug, targets=len(target_ids))
    if progress is not None:
        progress(0, len(target_ids))
    for start in range(0, len(target_ids), block):
        ids = target_ids[start : start + block]
        _rescore_block(ids, wanted, report)
        if progress is not None:
            progress(min(start + block, len(target_ids)), len(target_ids))
    return report


@transaction.atomic
def _rescore_block(target_ids: list[int], wanted: set[str] | None, report: RescoreReport) -> None:
    lengths = dict(Target.objects.filter(pk__in=target_ids).values_list("pk", "length"))
    references: dict[str, dict[int, str]] = defaultdict(dict)
    stored = ReferenceStructure.objects.filter(target_id__in=target_ids)
    for target_id, definition, pairs in stored.values_list("target_id", "definition", "pairs"):
        if wanted is None or definition in wanted:
            references[definition][target_id] = pairs
    predictions = list(
        Prediction.objects.filter(target_id__in=target_ids, status=Prediction.Status.OK)
        .order_by("target_id", "pk")
        .values_list("pk", "target_id", "pairs")
    )
    report.predictions += len(predictions)
    existing = {
        (row["prediction_id"], row["definition"]): row
        for row in Score.objects.filter(prediction__in=[p for p, _, _ in predictions]).values(
            "id", "prediction_id", "definition", *SCORE_FIELDS
        )
    }
    computed: dict[tuple[int, str], dict] = {}
    for definition, by_target in references.items():
        cases = [(p, t, text) for p, t, text in predictions if t in by_target]
        computed.update(_score_definition(definition, cases, by_target, lengths, report))

    # a score of a definition the target no longer has a reference for (not one kept after an error)
    target_of = {p: t for p, t, _ in predictions}
    stale = [
        row["id"]
        for (prediction_id, definition), row in existing.items()
        if (wanted is None or definition in wanted)
        and target_of[prediction_id] not in references.get(definition, {})
    ]
    to_create, to_update = [], []
    for (prediction_id, definition), values in computed.items():
        row = existing.get((prediction_id, definition))
        if row is None:
            to_create.append(Score(prediction_id=prediction_id, definition=definition, **values))
        elif any(row[k] != values[k] for k in SCORE_FIELDS):
            to_update.append(
                Score(id=row["id"], prediction_id=prediction_id, definition=definition, **values)
            )
        else:
            report.unchanged += 1
    Score.objects.bulk_create(to_create, batch_size=1000)
    Score.objects.bulk_update(to_update, SCORE_FIELDS, batch_size=1000)
    if stale:
        Score.objects.filter(id__in=stale).delete()
    report.created += len(to_create)
    report.updated += len(to_update)
    report.deleted += len(stale)


def _score_definition(
    definition: str,
    cases: list[tuple[int, int, str]],
    by_target: dict[int, str],
    lengths: dict[int, int],
    report: RescoreReport,
) -> dict[tuple[int, str], dict]:
    """Counts, scores and WL of each (prediction, target, text) against the target's reference text."""
    if not cases:
        return {}
    target_list = sorted(by_target)
    index = {t: k for k, t in enumerate(target_list)}
    ref_lengths = [lengths[t] for t in target_list]
    ref_texts = [by_target[t] for t in target_list]
    try:
        batch, scores = score_texts(ref_lengths, ref_texts, [text for _, _, text in cases],
                                    [index[t] for _, t, _ in cases])
        good = cases
    except StructureFormatError:
        # find the unreadable ones, keep their old scores, score the rest
        good = []
        for p, t, text in cases:
            try:
                structure_from_text(lengths[t], text)
                structure_from_text(lengths[t], by_target[t])
                good.append((p, t, text))
            except StructureFormatError as exc:
                report.errors.append(f"prediction {p} ({definition}): {exc}")
        if not good:
            return {}
        batch, scores = score_texts(ref_lengths, ref_texts, [text for _, _, text in good],
                                    [index[t] for _, t, _ in good])
    report.compared += len(good)
    out = {}
    structures = {t: structure_from_text(lengths[t], by_target[t]) for t in {t for _, t, _ in good}}
    counts = batch.counts.tolist()
    score_lists = {k: np.asarray(v).tolist() for k, v in scores.items()}
    for n, (p, t, text) in enumerate(good):
        values = dict(zip(COUNT_FIELDS, counts[n], strict=True))
        predicted = structure_from_text(lengths[t], text)
        # Every metric of the registry: those from counts as the batch scorer computed them, the others here.
        for m in METRICS:
            if m.needs == "counts":
                values[m.name] = score_lists[m.name][n]
            else:
                values[m.name] = m.of_structures(structures[t], predicted)
        out[(p, definition)] = values
    return out
