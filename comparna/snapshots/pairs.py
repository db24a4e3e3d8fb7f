"""The pair download: two methods' current versions compared target by target on a dataset or subset."""

from __future__ import annotations

from collections.abc import Iterator

from comparna.models import Dataset, RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import write_dot_bracket
from comparna.rna.ranking import COUNT_FIELDS as ENGINE_COUNTS
from comparna.rna.structure import StructureFormatError
from comparna.services.ranking_scope import scored_targets
from predictors.models import Method, MethodVersion

#: Per method: the prediction's outcome, then these numbers of its score row (what its MCC is made of).
PAIR_NUMBERS = (*ENGINE_COUNTS, "mcc")
PAIR_COLUMNS_PER_METHOD = ("status", "pairs", "dot_bracket", *PAIR_NUMBERS)


def _dbn(length: int, pairs: str) -> str:
    try:
        return write_dot_bracket(structure_from_text(length, pairs))
    except StructureFormatError:
        return ""


def pair_csv_rows(
    *,
    dataset: Dataset,
    method_a: Method,
    method_b: Method,
    subset: Subset | None = None,
    ranking: RankingSnapshot | None = None,
) -> Iterator[list]:
    """CSV rows (header first) comparing two methods' current versions on ``dataset`` (or one subset).

    One row per common target and pair definition: targets where both methods have counts under that
    definition (the pairwise set of the rankings), with the reference and both predictions as canonical pair
    text and dot-bracket (empty when the structure has multiplets), and both methods' counts.

    With ``ranking`` (a ranking snapshot that stores its scored target sets), the rows are that snapshot's:
    its subset and definition, the method versions it ranked, the targets both had scored when it was
    computed — the common targets of its matrix.
    """
    va, vb = method_a.current_version, method_b.current_version
    definitions = subset.definitions() if subset is not None else list(dataset.definitions)
    kept: dict[int, set[str]] | None = None
    if ranking is not None:
        subset, definitions = ranking.subset, [ranking.definition]
        fingerprints = ranking.inputs.get("methods", {})
        va, vb = (
            MethodVersion.objects.filter(method=m, fingerprint=fingerprints.get(m.name, "")).first()
            for m in (method_a, method_b)
        )
        if va is not None and vb is not None:
            kept = {
                v.pk: scored_targets(ranking.report, m.name) or set()
                for v, m in ((va, method_a), (vb, method_b))
            }
    header = ["target", "length", "definition", "sequence", "reference_pairs", "reference_dot_bracket"]
    for label in ("a", "b"):
        header += [f"{label}_{c}" for c in PAIR_COLUMNS_PER_METHOD]
    yield header
    if va is None or vb is None:
        return
    scores: dict[tuple[int, str], dict[int, tuple]] = {}
    rows = Score.objects.public().filter(
        prediction__method_version__in=[va, vb],
        prediction__target__dataset=dataset,
        definition__in=definitions,
    )
    if subset is not None:
        rows = rows.filter(prediction__target__subsets=subset)
    for version_id, target_id, definition, status, pairs, *counts in rows.values_list(
        "prediction__method_version_id",
        "prediction__target_id",
        "definition",
        "prediction__status",
        "prediction__pairs",
        *PAIR_NUMBERS,
    ).iterator(chunk_size=5000):
        scores.setdefault((target_id, definition), {})[version_id] = (status, pairs, *counts)
    common = [k for k, v in scores.items() if va.pk in v and vb.pk in v]
    target_ids = sorted({t for t, _ in common})
    targets = {t.pk: t for t in Target.objects.filter(pk__in=target_ids)}
    if kept is not None:
        common = [k for k in common if all(targets[k[0]].source_id in kept[v.pk] for v in (va, vb))]
    refs = {
        (r.target_id, r.definition): r.pairs
        for r in ReferenceStructure.objects.filter(target_id__in=target_ids, definition__in=definitions)
    }
    for target_id, definition in sorted(common, key=lambda k: (targets[k[0]].source_id, k[1])):
        t = targets[target_id]
        ref = refs.get((target_id, definition), "")
        row = [t.source_id, t.length, definition, t.sequence, ref, _dbn(t.length, ref)]
        for version in (va, vb):
            status, pairs, *counts = scores[(target_id, definition)][version.pk]
            row += [status, pairs, _dbn(t.length, pairs), *counts]
        yield row

