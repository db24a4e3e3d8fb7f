"""What the benchmark knows of RNAs like a user's sequence (issue 40), computed by a worker, stored as JSON.

For one sequence: its Rfam family (cmscan with the project's library; "no family found" is an answer), its
length bin and GC content; the benchmark targets of at least :data:`NEAR_IDENTITY` identity (a structure of a
near-identical RNA is known); and the rankings of the slice that matches it — its family's subsets across
datasets where they exist, else its length bin — read from the stored ranking snapshots (the same rows, rank
intervals, mean MCC with n and state as the ranking pages), with a sentence saying how much evidence there is.
"""

from __future__ import annotations

import logging
from collections import Counter

from django.db.models import Count

from comparna.models import Dataset, RankingSnapshot, RankingSnapshotSummary, Subset, Target
from comparna.rna.families import by_label, family_of_rfam
from comparna.services.pages.common import length_bin
from comparna.services.pages.ranking_status import snapshot_states

log = logging.getLogger(__name__)

#: A benchmark target at least this identical (1 − edit distance / longer length) is "near-identical".
NEAR_IDENTITY = 0.80
#: Candidates (by shared 4-mers) aligned exactly per query, and near-identical targets shown.
CANDIDATES = 60
SHOWN_SIMILAR = 10
#: Datasets never searched nor shown: their structures are not public before release.
HIDDEN_DATASETS = ("pdb-blind",)
#: Length-bin subsets of the declarations (ingest.datasets.catalogue), by the SCIENCE.md §3 bins.
LENGTH_SUBSETS = ((20, 200, "short"), (201, 800, "medium"), (801, None, "long"))


def family_evidence(sequence: str) -> dict:
    """``{"found": bool, "accession", "rfam_id", "label", "evalue", "coverage", "library"}`` or, when the
    library cannot be used, ``{"found": False, "error": ...}``."""
    from ingest.management.commands.assign_family import configured_library
    from ingest.rfam.cmscan import assign_family
    from ingest.rfam.library import RfamLibraryError

    try:
        library = configured_library()
        hit = assign_family(sequence, library)
    except (RfamLibraryError, OSError, ValueError) as exc:
        return {"found": False, "error": f"Rfam family assignment is unavailable: {exc}"}
    if hit is None:
        return {"found": False, "library": library.version}
    return {
        "found": True,
        "accession": hit.accession,
        "rfam_id": hit.family_id,
        "label": family_of_rfam(hit.accession, hit.family_id),
        "evalue": hit.evalue,
        "coverage": hit.coverage,
        "library": library.version,
    }


def _kmers(sequence: str, k: int = 4) -> Counter:
    return Counter(sequence[i : i + k] for i in range(len(sequence) - k + 1))


def similar_targets(sequence: str) -> list[dict]:
    """Benchmark targets of at least :data:`NEAR_IDENTITY` identity, most identical first.

    Identity ≥ 0.8 bounds the length ratio (edit distance ≥ the length difference), so only targets within
    it are read; among them the :data:`CANDIDATES` sharing most 4-mers are aligned exactly
    (:func:`ingest.rfam.inputs.sequence_identity`, the identity the comparative inputs use)."""
    from ingest.rfam.inputs import sequence_identity

    n = len(sequence)
    low, high = int(n * NEAR_IDENTITY), int(n / NEAR_IDENTITY) + 1
    rows = (
        Target.objects.filter(length__gte=low, length__lte=high)
        .exclude(dataset__slug__in=HIDDEN_DATASETS)
        .values_list("pk", "sequence")
    )
    query = _kmers(sequence)
    scored = []
    for pk, other in rows.iterator(chunk_size=2000):
        shared = sum((query & _kmers(other)).values())
        scored.append((shared, pk, other))
    scored.sort(key=lambda row: (-row[0], row[1]))
    hits = []
    for _, pk, other in scored[:CANDIDATES]:
        identity = sequence_identity(sequence, other)
        if identity >= NEAR_IDENTITY:
            hits.append((identity, pk))
    hits.sort(key=lambda row: (-row[0], row[1]))
    targets = Target.objects.select_related("dataset").in_bulk([pk for _, pk in hits[:SHOWN_SIMILAR]])
    return [
        {
            "target": pk,
            "identity": round(identity, 4),
            "dataset": targets[pk].dataset.name,
            "source_id": targets[pk].source_id,
            "length": targets[pk].length,
            "family": targets[pk].family,
        }
        for identity, pk in hits[:SHOWN_SIMILAR]
    ]


def _length_slug(n: int) -> str | None:
    for lo, hi, slug in LENGTH_SUBSETS:
        if n >= lo and (hi is None or n <= hi):
            return slug
    return None


def matching_subsets(family_label: str, length: int) -> tuple[str, list[Subset]]:
    """The slice that matches a sequence: ``("family", subsets)`` of its family across datasets where they
    exist, else ``("length", subsets)`` of its length bin."""
    base = Subset.objects.select_related("dataset").exclude(dataset__slug__in=HIDDEN_DATASETS)
    family = by_label(family_label) if family_label else None
    if family is not None:
        found = list(base.filter(slug=f"family-{family.slug}").order_by("dataset__name"))
        if found:
            return "family", found
    slug = _length_slug(length)
    return "length", list(base.filter(slug=slug).order_by("dataset__name")) if slug else []


def _newest(subset: Subset) -> list[RankingSnapshot]:
    """The newest snapshot of each definition the subset's dataset is scored on (without their reports)."""
    out = []
    definitions = subset.dataset.definitions or []
    for definition in definitions[:1] or [None]:
        qs = RankingSnapshot.objects.filter(subset=subset).defer("report", "inputs")
        if definition:
            qs = qs.filter(definition=definition)
        snap = qs.order_by("-computed_at", "-pk").first()
        if snap is not None:
            out.append(snap)
    return out


def slice_rankings(subsets: list[Subset]) -> list[dict]:
    """Per matching subset with a stored ranking: its rows (method, rank, interval, mean MCC with n), its
    state (settled or provisional with reasons) and its link, as the ranking pages show them."""
    snapshots = [snap for subset in subsets for snap in _newest(subset)]
    if not snapshots:
        return []
    states = snapshot_states(snapshots)
    summaries = {
        s.snapshot_id: s
        for s in RankingSnapshotSummary.objects.filter(snapshot__in=[x.pk for x in snapshots])
    }
    sizes = dict(
        Subset.objects.filter(pk__in=[s.subset_id for s in snapshots])
        .annotate(n=Count("targets"))
        .values_list("pk", "n")
    )
    out = []
    for snap in snapshots:
        summary = summaries.get(snap.pk)
        rows = summary.methods if summary is not None else _rows_from_report(snap)
        state = states.get(snap.pk) or {}
        out.append({
            "snapshot": snap.pk,
            "dataset": snap.dataset.name,
            "dataset_slug": snap.dataset.slug,
            "subset": snap.subset.name,
            "subset_slug": snap.subset.slug,
            "definition": snap.definition,
            "targets": sizes.get(snap.subset_id, 0),
            "state": state.get("label", "provisional"),
            "reasons": list(state.get("reasons") or []),
            "rows": sorted(rows, key=_row_order)[:15],
        })
    return out


def _rows_from_report(snapshot: RankingSnapshot) -> list[dict]:
    """The summary rows of a snapshot whose summary the background has not stored yet (a ranking refreshed
    a moment ago: the usual case while ``make run`` fills), read from its report's methods as the summary
    itself is (an earlier version read a "rows" key no report has, and the advisor ran nothing)."""
    from comparna.services.summaries import snapshot_summary_fields

    full = RankingSnapshot.objects.only("report").get(pk=snapshot.pk)
    report = full.report or {}
    fields = snapshot_summary_fields(report.get("protocol"), report.get("clusters"), report.get("methods"))
    return fields["methods"]


def _row_order(row: dict) -> tuple:
    ranked = bool(row.get("ranked", True))
    mcc = row.get("decided_mcc")
    return (not ranked, row.get("rank") or 10**6, -(mcc if isinstance(mcc, int | float) else -1.0))


def evidence_sentence(kind: str, label: str, slices: list[dict], length: int) -> str:
    """How much evidence there is, in one plain sentence."""
    if not slices:
        what = f"{label} targets" if kind == "family" else f"targets of {length_bin(length)}"
        return f"No ranking of {what} is stored yet: the benchmark cannot say which method is best for it."
    total = sum(s["targets"] for s in slices)
    noun = "target" if total == 1 else "targets"
    what = {"family": f"{label} {noun}", "all": noun}.get(kind, f"{noun} of {length_bin(length)}")
    datasets = len({s["dataset"] for s in slices})
    first = max(slices, key=lambda s: s["targets"])
    top = [r for r in first["rows"] if r.get("ranked", True)][:3]
    if len(top) < 2:
        tail = "too few methods are ranked there to compare"
    else:
        lows = [r.get("rank_low") or r.get("rank") for r in top]
        highs = [r.get("rank_high") or r.get("rank") for r in top]
        separable = all(highs[k] < lows[k + 1] for k in range(len(top) - 1))
        tail = (f"the top {len(top)} are separated at this n" if separable
                else f"the top {len(top)} are not separable at this n")
    state = "" if all(s["state"] == "settled" for s in slices) else " (provisional)"
    plural = "s" if datasets != 1 else ""
    return f"{total} {what} in {datasets} dataset{plural}{state}; {tail}."


def build_evidence(sequence: str) -> dict:
    """Everything :mod:`comparna.advice` shows of one sequence before any method runs on it."""
    family = family_evidence(sequence)
    label = family.get("label", "") if family.get("found") else ""
    kind, subsets = matching_subsets(label, len(sequence))
    slices = slice_rankings(subsets)
    sentence = evidence_sentence(kind, label, slices, len(sequence))
    if not any(s["rows"] for s in slices):
        # nothing ranked on the matching slice yet (early in a backlog, or a rare slice): the methods that
        # lead the all-RNA rankings instead, said so, rather than run nothing
        everything = slice_rankings(list(
            Subset.objects.select_related("dataset").exclude(dataset__slug__in=HIDDEN_DATASETS)
            .filter(slug="all").order_by("dataset__name")
        ))
        if any(s["rows"] for s in everything):
            what = f"{label} targets" if kind == "family" else f"targets of {length_bin(len(sequence))}"
            sentence = (f"No ranking of {what} has results yet; the methods below lead the rankings of all "
                        f"RNAs instead — " + evidence_sentence("all", "", everything, len(sequence)))
            kind, slices = "all", everything
    return {
        "length": len(sequence),
        "length_bin": length_bin(len(sequence)),
        "gc_content": round((sequence.count("G") + sequence.count("C")) / len(sequence), 4),
        "family": family,
        "similar": similar_targets(sequence),
        "slice_kind": kind,
        "slices": slices,
        "sentence": sentence,
        "datasets": Dataset.objects.exclude(slug__in=HIDDEN_DATASETS).count(),
    }
