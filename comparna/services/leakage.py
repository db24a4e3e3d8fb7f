"""Leakage-aware ("unseen") rankings: each pair of methods compared only on targets neither could have seen.

A method could have seen a target (issue 15) when

- the target's family (``Target.family``: its dataset's class, else its Rfam assignment) is one of the
  families the method declares for its training data (``"*"``: the training sets hold RNAs of any family,
  so every target with a family label counts as seen), or
- its sequence is at or above :data:`IDENTITY` identity to some sequence of a declared training set that
  is available locally: the CompaRNA datasets a declaration names (every entry read from the dataset's
  source, kept or not), screened with ``cd-hit-est-2d`` (:func:`comparna.rna.redundancy.find_similar`:
  identity over the shorter sequence, alignment covering :data:`COVERAGE` of the longer).

Declared sets that are not available locally are listed with the ranking (no identity screen against
them). A method without a usable declaration is left out and shown as "training data undeclared".

The unseen ranking is the engine's pairwise ranking (SCIENCE.md §5) on the full ranking's counts table of
the dataset's "All RNAs" subset with each method's targets masked to its unseen ones: a pair's common
targets are then exactly the targets both predicted and neither could have seen. Everything is sorted by
name/source id and seeded, so the same inputs give the same ranking; a new :class:`UnseenRanking` row is
stored only when the inputs changed.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction

from comparna.models import Dataset, DatasetEntry, IdentityScreen, Subset, Target, UnseenRanking
from comparna.rna.ranking import CountsTable, ranking_report
from comparna.rna.redundancy import find_similar
from comparna.services.rankings import build_counts_table, rank_subset
from predictors.models import Method
from predictors.training_data import ANY_FAMILY, Declaration, declaration_of

__all__ = ["COVERAGE", "IDENTITY", "identity_screen", "rank_unseen", "recompute_unseen", "unseen_mask"]

#: Identity (over the shorter sequence) at or above which a target counts as seen in a training set.
IDENTITY = float(getattr(settings, "LEAKAGE_IDENTITY", 0.8))
#: Alignment coverage of the longer sequence required with it.
COVERAGE = float(getattr(settings, "LEAKAGE_COVERAGE", 0.5))
#: Methods with fewer unseen predicted targets are not ranked (the engine's minimum of common targets).
MIN_UNSEEN = 10


def _cdhit_sequence(seq: str) -> str:
    """CD-HIT's alphabet: symbols other than ACGTU become N (matching nothing)."""
    return "".join(c if c in "ACGTU" else "N" for c in seq.upper())


def _screen_key(targets: list[tuple[str, str]], entries: list[tuple[str, str]]) -> str:
    blob = json.dumps({"t": targets, "e": entries, "identity": IDENTITY, "coverage": COVERAGE})
    return hashlib.sha256(blob.encode()).hexdigest()


def identity_screen(dataset: Dataset, against: Dataset) -> dict[str, str]:
    """``{target source id: training entry id}`` for the targets of ``dataset`` similar to an entry of
    ``against`` (cached per content). A dataset screened against itself: every target (it is an entry)."""
    targets = list(Target.objects.filter(dataset=dataset).order_by("source_id").values_list("source_id",
                                                                                           "sequence"))
    if dataset.pk == against.pk:
        return {sid: sid for sid, _ in targets}
    entries = [
        (sid, seq)
        for sid, seq in DatasetEntry.objects.filter(dataset=against).order_by("source_id")
        .values_list("source_id", "sequence")
        if len(seq) >= 12
    ]
    key = _screen_key(targets, entries)
    cached = IdentityScreen.objects.filter(dataset=dataset, against=against, key=key).first()
    if cached is not None:
        return dict(cached.similar)
    found = find_similar(
        {f"t{n}": _cdhit_sequence(s) for n, (_, s) in enumerate(targets)},
        {f"e{n}": _cdhit_sequence(s) for n, (_, s) in enumerate(entries)},
        identity=IDENTITY,
        coverage_longer=COVERAGE,
        cdhit2d_path=settings.CDHIT_EST_2D,
        threads=1,
    )
    similar = {
        targets[int(t[1:])][0]: entries[int(e[1:])][0] for t, e in sorted(found.items()) if e is not None
    }
    try:
        with transaction.atomic():
            IdentityScreen.objects.create(
                dataset=dataset, against=against, key=key, similar=similar,
                parameters={"identity": IDENTITY, "coverage_longer": COVERAGE, "program": "cd-hit-est-2d",
                            "targets": len(targets), "entries": len(entries)},
            )
    except IntegrityError:  # computed concurrently: identical by construction
        pass
    return similar


def unseen_mask(
    families: list[str], declaration: Declaration, similar: dict[str, set[int]]
) -> tuple[np.ndarray, int, int]:
    """Which targets (in ``families`` order) the declaration could not have seen.

    ``similar`` maps each declared dataset slug to the indices of the targets similar to it. Returns the
    mask and how many targets were excluded by family and (of the rest) by identity.
    """
    by_family = np.array(
        [bool(f) and (ANY_FAMILY in declaration.families or f in declaration.families) for f in families],
        dtype=bool,
    )
    by_identity = np.zeros(len(families), dtype=bool)
    for slug in declaration.datasets:
        idx = sorted(similar.get(slug, ()))
        by_identity[idx] = True
    return ~(by_family | by_identity), int(by_family.sum()), int((by_identity & ~by_family).sum())


def _declarations(names: tuple[str, ...]) -> dict[str, Declaration]:
    methods = Method.objects.public().filter(name__in=names)
    methods = methods.prefetch_related("versions__training_declaration")
    out = {}
    for m in methods:
        current = next((v for v in m.versions.all() if v.is_current), None)
        out[m.name] = declaration_of(current)
    return out


def _pre_key(full, declarations: dict[str, Declaration], seed: int) -> str:
    slugs = sorted({s for d in declarations.values() for s in d.datasets})
    versions = dict(Dataset.objects.filter(slug__in=slugs).values_list("slug", "version"))
    entries = {s: DatasetEntry.objects.filter(dataset__slug=s).count() for s in slugs}
    blob = {
        "full": full.pk, "full_hash": full.inputs_hash, "seed": seed,
        "identity": IDENTITY, "coverage": COVERAGE,
        "declarations": {n: d.as_dict() for n, d in sorted(declarations.items())},
        "training_versions": versions, "training_entries": entries,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()


def rank_unseen(
    *, dataset: Dataset, definition: str, seed: int | None = None
) -> tuple[UnseenRanking, bool] | None:
    """Store the unseen ranking of ``dataset`` under ``definition`` unless one with identical inputs exists.

    Returns (row, whether it is new), or None when the dataset has no "all" subset.
    """
    seed = settings.RANKING_SEED if seed is None else seed
    subset = Subset.objects.filter(dataset=dataset, slug="all").first()
    if subset is None:
        return None
    full, _ = rank_subset(subset=subset, definition=definition, seed=seed)
    # Fast path (the job runs often in make run): same full snapshot, declarations and training datasets
    # as a stored unseen ranking -> same inputs (target families are in the full snapshot's inputs).
    declarations = _declarations(tuple(full.inputs.get("methods", {})))
    pre_key = _pre_key(full, declarations, seed)
    stored = UnseenRanking.objects.filter(dataset=dataset, definition=definition).first()
    if stored is not None and stored.inputs.get("pre_key") == pre_key:
        return stored, False
    table, identity = build_counts_table(subset=subset, definition=definition)
    by_sid = dict(subset.targets.values_list("source_id", "family"))
    families = [by_sid.get(sid, "") for sid in table.targets]
    declarations = _declarations(table.methods)
    index = {sid: n for n, sid in enumerate(table.targets)}
    similar: dict[str, set[int]] = {}
    unavailable_local: set[str] = set()
    for slug in sorted({s for d in declarations.values() if d.usable for s in d.datasets}):
        against = Dataset.objects.filter(slug=slug).first()
        if against is None or (against.pk != dataset.pk and not against.entries.exists()):
            unavailable_local.add(slug)
            continue
        similar[slug] = {index[sid] for sid in identity_screen(dataset, against) if sid in index}
    kept, masks, per_method, not_ranked = [], [], {}, {}
    for i, name in enumerate(table.methods):
        decl = declarations.get(name)
        if decl is None or not decl.usable:
            not_ranked[name] = decl.reason if decl is not None else "training data undeclared"
            per_method[name] = {"declaration": (decl.as_dict() if decl else None)}
            continue
        mask, fam, ident = unseen_mask(families, decl, similar)
        predicted = int((table.present[i] & mask).sum())
        per_method[name] = {
            "declaration": decl.as_dict(), "unseen_targets": int(mask.sum()), "unseen_predicted": predicted,
            "seen_by_family": fam, "seen_by_identity": ident,
        }
        if predicted < MIN_UNSEEN:
            not_ranked[name] = f"fewer than {MIN_UNSEEN} unseen targets predicted ({predicted})"
            continue
        kept.append(i)
        masks.append(mask)
    sub = CountsTable(
        tuple(table.methods[i] for i in kept), table.targets, table.counts[kept],
        table.present[kept] & np.array(masks, dtype=bool).reshape(len(kept), len(table.targets)),
    )
    mask_digest = hashlib.sha256(sub.present.tobytes() + json.dumps(sub.methods).encode()).hexdigest()
    inputs = {
        **identity,
        "seed": seed,
        "unseen_present_sha256": mask_digest,
        "identity_threshold": IDENTITY,
        "coverage_longer": COVERAGE,
        "declarations": {n: per_method[n]["declaration"] for n in sorted(per_method)},
        "not_ranked": not_ranked,
        "full_snapshot": full.pk,
        "pre_key": pre_key,
    }
    inputs.pop("clusters", None)
    inputs.pop("reference_pairs", None)
    inputs.pop("candidate_pairs", None)
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    existing = UnseenRanking.objects.filter(dataset=dataset, definition=definition, inputs_hash=key).first()
    if existing is not None:
        return existing, False
    if sub.methods:
        report = ranking_report(sub, seed=seed, clusters=identity.get("clusters") or None)
        report.pop("robustness", None)
        report.pop("robustness_error", None)
    else:
        report = {"methods": [], "verdicts": {}, "common_targets": {}, "seed": seed, "conventions": {}}
    report.update(
        per_method=per_method,
        not_ranked=not_ranked,
        full_ranks={r["method"]: r["rank"] for r in full.report.get("methods", [])},
        full_snapshot=full.pk,
        unavailable=sorted({u for d in declarations.values() if d.usable for u in d.unavailable}
                           | unavailable_local),
        screened_against=sorted(similar),
        identity_threshold=IDENTITY,
        coverage_longer=COVERAGE,
    )
    try:
        with transaction.atomic():
            row = UnseenRanking.objects.create(
                dataset=dataset, definition=definition, seed=seed, inputs_hash=key, inputs=inputs,
                report=report,
            )
    except IntegrityError:
        return UnseenRanking.objects.get(dataset=dataset, definition=definition, inputs_hash=key), False
    return row, True


def recompute_unseen(
    *, dataset: Dataset | None = None, seed: int | None = None
) -> list[tuple[UnseenRanking, bool]]:
    """The unseen ranking of every dataset (or one) under each of its definitions (the nightly job's hook)."""
    datasets = [dataset] if dataset is not None else list(Dataset.objects.order_by("slug"))
    out = []
    for ds in datasets:
        for definition in ds.definitions:
            result = rank_unseen(dataset=ds, definition=definition, seed=seed)
            if result is not None:
                out.append(result)
    return out


def latest_unseen(dataset: Dataset, definition: str) -> UnseenRanking | None:
    return UnseenRanking.objects.filter(dataset=dataset, definition=definition).first()
