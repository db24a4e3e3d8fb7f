"""The target page: its references drawn as arc diagrams (standard vs extended pairs), and every prediction
drawn against the reference and scored."""

from __future__ import annotations

from django.urls import reverse

from comparna.models import Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.formats import write_dot_bracket
from comparna.rna.structure import StructureFormatError
from comparna.services.pages.drawing import PairMark, prediction_marks, structure_drawing_svg
from comparna.services.pages.figures import Arc, arc_diagram_svg, standalone_svg
from predictors.models import Prediction
from predictors.provenance import describe as describe_provenance


def dot_bracket_or_none(length: int, pairs_text: str) -> str | None:
    """Dot-bracket of stored pairs, or None when it cannot be written (multiplets)."""
    try:
        return write_dot_bracket(structure_from_text(length, pairs_text))
    except StructureFormatError:
        return None


def _pair_set(text: str) -> set[tuple[int, int]]:
    out = set()
    for tok in text.split():
        i, _, j = tok.partition("-")
        out.add((int(i), int(j)))
    return out


def target_context(target: Target) -> dict:
    """References (drawn, with standard vs extended pairs) and every prediction drawn and scored."""
    refs = {r.definition: r for r in target.references.all()}
    classes: dict[tuple[int, int], str] = {}
    for r in refs.values():
        for item in r.classes or []:
            classes[(int(item[0]), int(item[1]))] = str(item[2])
    standard = _pair_set(refs["standard"].pairs) if "standard" in refs else None
    references = []
    for definition in ("extended", "standard"):
        r = refs.get(definition)
        if r is None:
            continue
        pairs = _pair_set(r.pairs)
        arcs = []
        for i, j in sorted(pairs):
            kind = "standard" if (standard is None or (i, j) in standard) else "extended"
            lw = classes.get((i, j), "")
            arcs.append(
                Arc(
                    i,
                    j,
                    f"ref {kind}",
                    f"{i}–{j} {target.sequence[i - 1]}-{target.sequence[j - 1]}"
                    f"{' ' + lw if lw else ''} ({kind})",
                )
            )
        references.append(
            {
                "definition": definition,
                "reference": r,
                "structure_url": reverse("target-reference-structure", args=[target.pk, definition]),
                "dot_bracket": dot_bracket_or_none(target.length, r.pairs),
                "svg": arc_diagram_svg(
                    target.length, arcs, sequence=target.sequence, label=f"{definition} reference"
                ),
                "n_standard": sum(1 for a in arcs if "standard" in a.css.split()),
                "n_non_standard": sum(1 for a in arcs if "extended" in a.css.split()),
            }
        )
    main_def = main_definition(refs)
    predictions = []
    for p in (
        target.predictions.public()
        .select_related("method_version__method")
        .prefetch_related("scores")
        .order_by("method_version__method__name", "-method_version__created_at")
    ):
        scores = {s.definition: s for s in p.scores.all()}
        entry = {
            "prediction": p,
            "method": p.method_version.method,
            "version": p.method_version,
            "scores": [scores[d] for d in ("extended", "standard") if d in scores],
            "provenance": describe_provenance(p, target),  # issue 36: who controls what produced it
            "drawing_url": None,
            "dot_bracket": None,
        }
        if p.status == Prediction.Status.OK:
            # drawn by its own URL (an <img> loaded when scrolled to): a long target's twelve drawings
            # would make the page megabytes long
            entry["drawing_url"] = reverse("target-prediction-drawing", args=[target.pk, p.pk])
            entry["structure_url"] = reverse("target-prediction-structure", args=[target.pk, p.pk])
            entry["dot_bracket"] = dot_bracket_or_none(target.length, p.pairs)
        predictions.append(entry)
    return {
        "references": references,
        "predictions": predictions,
        "main_definition": main_def,
        "chain": chain_of(target),
        **annotation_notes(target),
    }


def chain_of(target: Target) -> dict | None:
    """Which chain of its PDB entry a PDB-derived target is: ``{"chain", "note"}`` (``chain`` empty when
    the source does not say), or None for a target not taken from a PDB entry."""
    if not target.pdb_id:
        return None
    provenance = target.provenance or {}
    chain = target.chain_id or str(provenance.get("chain_id") or provenance.get("chain") or "")
    if chain:
        return {"chain": chain, "note": ""}
    if provenance.get("molecules") == 1:
        # RNA STRAND gives the PDB id and the number of molecules, never the chain's name
        return {"chain": "", "note": "one RNA molecule of the entry; RNA STRAND does not name its chain"}
    return {"chain": "", "note": "the source does not name the chain"}


def main_definition(refs: dict) -> str | None:
    """The definition predictions are drawn against: extended where the target has it."""
    return "extended" if "extended" in refs else next(iter(refs), None)


def prediction_drawing(target: Target, prediction: Prediction) -> str:
    """A standalone SVG of one prediction against the reference: reference pairs above (found or missed),
    predicted pairs below (correct or not in the reference), styled inside (it is shown as an image)."""
    refs = {r.definition: r for r in target.references.all()}
    main_def = main_definition(refs)
    main_pairs = _pair_set(refs[main_def].pairs) if main_def else set()
    pred_pairs = _pair_set(prediction.pairs)
    upper = [
        Arc(
            i,
            j,
            "ref " + ("found" if (i, j) in pred_pairs else "missed"),
            f"reference {i}–{j}" + (" (found)" if (i, j) in pred_pairs else " (missed)"),
        )
        for i, j in sorted(main_pairs)
    ]
    lower = [
        Arc(
            i,
            j,
            "pred " + ("tp" if (i, j) in main_pairs else "fp"),
            f"predicted {i}–{j}" + (" correct" if (i, j) in main_pairs else " not in the reference"),
        )
        for i, j in sorted(pred_pairs)
    ]
    svg = arc_diagram_svg(
        target.length,
        upper,
        lower,
        sequence=target.sequence,
        label=f"{prediction.method_version.method.name} vs reference",
    )
    return standalone_svg(svg)


def reference_structure_drawing(target: Target, definition: str) -> str | None:
    """The 2-D drawing of a target's reference under ``definition`` (None when it has none)."""
    ref = target.references.filter(definition=definition).first()
    if ref is None:
        return None
    pairs = _pair_set(ref.pairs)
    marks = [
        PairMark(i, j, "ref", f"{i}–{j} {target.sequence[i - 1]}-{target.sequence[j - 1]}")
        for i, j in sorted(pairs)
    ]
    label = f"{target.source_id}: {definition} reference ({len(pairs)} pairs)"
    return structure_drawing_svg(target.sequence, sorted(pairs), marks, label=label)


def prediction_structure_drawing(target: Target, prediction: Prediction) -> str:
    """The 2-D drawing of a prediction, laid out on its own pairs, each pair marked TP or FP against the
    reference the page scores it with, and the reference pairs it missed (FN) drawn dashed on the same
    layout."""
    refs = {r.definition: r for r in target.references.all()}
    main_def = main_definition(refs)
    reference = _pair_set(refs[main_def].pairs) if main_def else set()
    predicted = _pair_set(prediction.pairs)
    label = f"{prediction.method_version.method.name} on {target.source_id}, against the {main_def} reference"
    return structure_drawing_svg(
        target.sequence, sorted(predicted), prediction_marks(reference, predicted), label=label
    )


def annotation_notes(target: Target) -> dict:
    """What the 3D annotation of a PDB chain recorded beside its reference: pairs with other strands (not
    part of the reference, by the single-chain rule) and bases whose ring atoms are missing."""
    provenance = target.provenance or {}
    if not target.pdb_id:
        return {"annotation": None}
    recorded = "inter_chain_pairs" in provenance
    return {
        "annotation": {
            "recorded": recorded,
            "rule": provenance.get("single_chain_rule", ""),
            "other_strands": provenance.get("inter_chain_pairs", []),
            "incomplete_bases": provenance.get("incomplete_bases", []),
        }
    }
