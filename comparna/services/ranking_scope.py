"""What a subset ranking is computed on, stored with its snapshot so that every page of the snapshot uses it.

- **Finished outcomes.** A method's prediction of a target is *finished* when it was scored or ended in a
  recorded failure of the method (:data:`EMPTY_OUTCOMES`: failed, timeout, too long, unparsable). Queued,
  running or awaiting predictions are not finished; neither is an infrastructure error (not the method's
  fault). The robustness ranking counts finished failures as empty structures, on the targets where every
  method has finished — never a queued prediction.
- **Ranked methods.** A method is ranked when at least one of its pairwise verdicts is determined (a win,
  a loss or a draw); with only "?" verdicts (fewer than 10 common targets with every other method) it is
  listed as not ranked, never given a shared first rank.
- **Common targets.** The pooled scores beside the ranks are computed on the targets every ranked method
  scored, so that they compare the same RNAs; their number is stored with the snapshot.
- **Scored target sets.** The snapshot stores its targets' source ids (the same after the data are restored
  elsewhere, so a recomputed report is identical) and, per method, a bitmap of the targets it scored, so the
  comparison page of a snapshot uses exactly the snapshot's common targets.
"""

from __future__ import annotations

import base64
import hashlib

import numpy as np

from comparna.models import Subset
from comparna.rna.metric_registry import POOLED, engine_counts, pooled_scores
from comparna.rna.ranking import COUNT_FIELDS, CountsTable
from predictors.models import Prediction

#: Recorded outcomes that leave a method without a structure by its own doing: an empty structure in the
#: robustness ranking.
EMPTY_OUTCOMES = (
    Prediction.Status.FAILED,
    Prediction.Status.TIMEOUT,
    Prediction.Status.TOO_LONG,
    Prediction.Status.UNPARSABLE,
)


def pack(mask: np.ndarray) -> str:
    """A boolean vector as base64 of its packed bits (big-endian bit order, numpy's default)."""
    return base64.b64encode(np.packbits(np.asarray(mask, dtype=bool)).tobytes()).decode("ascii")


def unpack(text: str, n: int) -> np.ndarray:
    """The boolean vector of length ``n`` that :func:`pack` made."""
    raw = np.frombuffer(base64.b64decode(text.encode("ascii")), dtype=np.uint8)
    return np.unpackbits(raw, count=n).astype(bool) if n else np.zeros(0, dtype=bool)


def empty_outcomes(*, subset: Subset, methods: tuple[str, ...], target_ids: list[int]) -> np.ndarray:
    """(methods, targets) mask of the current versions' finished failures (:data:`EMPTY_OUTCOMES`)."""
    mask = np.zeros((len(methods), len(target_ids)), dtype=bool)
    if not methods or not target_ids:
        return mask
    m_ix = {name: i for i, name in enumerate(methods)}
    t_ix = {pk: k for k, pk in enumerate(target_ids)}
    rows = Prediction.objects.public().filter(
        method_version__is_current=True,
        method_version__method__active=True,
        method_version__method__name__in=list(methods),
        target__subsets=subset,
        status__in=EMPTY_OUTCOMES,
    ).values_list("method_version__method__name", "target_id")
    for name, target_id in rows:
        if target_id in t_ix:
            mask[m_ix[name], t_ix[target_id]] = True
    return mask


def outcomes_digest(source_ids: tuple[str, ...], empty: np.ndarray) -> str:
    """SHA-256 of the targets (source ids: the same after a snapshot is restored elsewhere) and the failure
    mask (part of a ranking's inputs: the robustness ranking depends on it)."""
    blob = "\0".join(source_ids).encode() + b"\1" + np.asarray(empty, dtype=bool).tobytes()
    return hashlib.sha256(blob).hexdigest()


def determined(row: dict) -> int:
    """The number of a ranking row's determined verdicts (wins, losses, draws; not "?")."""
    return int(row.get("wins", 0)) + int(row.get("losses", 0)) + int(row.get("draws", 0))


def is_ranked(row: dict) -> bool:
    """Whether a ranking row is ranked (:mod:`this module's docstring <comparna.services.ranking_scope>`)."""
    return determined(row) > 0


def scope_report(table: CountsTable, report: dict, *, empty: np.ndarray) -> dict:
    """What to add to a subset ranking's report: target source ids, scored / failed bitmaps, the common
    targets of the ranked methods with each one's pooled scores on them, the number of robustness targets."""
    rows = {row["method"]: row for row in report.get("methods", [])}
    ranked = [name for name in table.methods if name in rows and is_ranked(rows[name])]
    for name, row in rows.items():
        row["ranked"] = name in ranked  # the API's rows say it too
    ix = [table.methods.index(name) for name in ranked]
    common = table.present[ix].all(axis=0) if ix else np.zeros(len(table.targets), dtype=bool)
    common_scores = {}
    for name, i in zip(ranked, ix, strict=True):
        summed = table.counts[i][common].sum(axis=0)
        pooled = engine_counts(**{f: int(x) for f, x in zip(COUNT_FIELDS, summed, strict=True)})
        common_scores[name] = pooled_scores(pooled, metrics=POOLED) if common.any() else None
    finished = table.present | empty
    return {
        "target_sources": list(table.targets),
        "scored": {name: pack(table.present[i]) for i, name in enumerate(table.methods)},
        "failed": {name: pack(empty[i]) for i, name in enumerate(table.methods)},
        "ranked_methods": ranked,
        "common_targets_ranked": int(common.sum()),
        "common_scores": common_scores,
        "robustness_targets": int(finished.all(axis=0).sum()) if table.methods else 0,
    }


def scored_targets(report: dict, method: str) -> set[str] | None:
    """The source ids of the targets ``method`` had scored in a snapshot's report (None: the snapshot
    predates the bitmaps or does not hold the method)."""
    ids = report.get("target_sources")
    bits = report.get("scored", {}).get(method)
    if ids is None or bits is None:
        return None
    return marked(ids, bits)


def marked(ids: list[str], bits: str) -> set[str]:
    """The ids a packed bitmap (:func:`pack`, one bit per id in order) marks."""
    return {pk for pk, on in zip(ids, unpack(bits, len(ids)), strict=True) if on}


def common_targets(report: dict) -> set[str] | None:
    """The source ids of the targets every ranked method of a snapshot scored (None: the snapshot predates
    the bitmaps)."""
    ranked = report.get("ranked_methods")
    if ranked is None or report.get("target_sources") is None:
        return None
    sets = [scored_targets(report, name) or set() for name in ranked]
    return set.intersection(*sets) if sets else set()
