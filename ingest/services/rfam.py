"""Rfam families (SCIENCE.md §4): assignment by cmscan, and the (seed)/(20) comparative inputs of a target."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction

from comparna import pipeline
from comparna.models import Target
from comparna.rna.families import family_of_rfam
from ingest.models import ComparativeInput, FamilyAssignment
from ingest.rfam.cmscan import scan_sequences
from ingest.rfam.inputs import align_to_family, seed_input, twenty_input
from ingest.rfam.library import RfamLibrary, resolve_library


def rfam_library() -> RfamLibrary:
    return resolve_library(settings.RFAM_LIBRARY)


def twenty_seed(target: Target) -> int:
    """The recorded random seed of a target's (20) draw: stable per target and settings seed."""
    digest = hashlib.sha256(f"{settings.RANKING_SEED}:{target.dataset.slug}:{target.source_id}".encode())
    return int.from_bytes(digest.digest()[:4], "big")


def assign_families(
    *, targets: Iterable[Target], library: RfamLibrary | None = None
) -> dict[int, FamilyAssignment]:
    """Assign an Rfam family to every target not yet assigned under the library's version (SCIENCE.md §4).

    One ``cmscan`` run for the batch; a target without a hit covering ≥ 80 % of it gets a row with an
    empty accession. Assigned targets get their (seed) and (20) inputs aligned by ``cmalign`` and stored.
    Returns {target pk: FamilyAssignment row} of the newly assigned. Then every given target (assigned now
    or before: a re-delivered batch) goes on through the pipeline to its comparative predictions.
    """
    library = library or rfam_library()
    targets = list(targets)
    todo = [t for t in targets if not t.family_assignments.filter(rfam_version=library.version).exists()]
    hits = scan_sequences({str(t.pk): t.sequence for t in todo}, library) if todo else {}
    rows = {}
    for target in todo:
        hit = hits.get(str(target.pk))
        # cmalign runs before the transaction: no write lock is held across a subprocess (with SQLite that
        # lock is the whole database's, and the predict workers waited on it until they failed)
        aligned = []
        if hit is not None:
            aligned = align_comparative_inputs(target=target, accession=hit.accession, library=library)
        with transaction.atomic():
            row, _ = FamilyAssignment.objects.get_or_create(
                target=target,
                rfam_version=library.version,
                defaults={
                    "accession": hit.accession if hit else "",
                    "family_id": hit.family_id if hit else "",
                    "evalue": hit.evalue if hit else None,
                    "score": hit.score if hit else None,
                    "coverage": hit.coverage if hit else None,
                },
            )
            label_family(target=target, assignment=row)
            if hit is not None:
                store_comparative_inputs(target=target, assignment=row, library=library, aligned=aligned)
        rows[target.pk] = row
    pipeline.families_assigned(target_ids=[t.pk for t in targets])
    return rows


def label_family(*, target: Target, assignment: FamilyAssignment) -> None:
    """The target's family label from its Rfam assignment, unless its dataset names its class."""
    if target.family_source == "dataset":
        return
    label = family_of_rfam(assignment.accession, assignment.family_id)
    Target.objects.filter(pk=target.pk).update(family=label, family_source="rfam" if label else "")
    target.family, target.family_source = label, "rfam" if label else ""


def align_comparative_inputs(*, target: Target, accession: str, library: RfamLibrary) -> list[tuple]:
    """Build the (seed) and (20) inputs of a target assigned to ``accession`` and align them (cmalign):
    [(input, aligned), ...], nothing stored."""
    seed = library.read_seed(accession)
    if seed is None:  # a model without a seed alignment (e.g. tRNA-Sec in the testsuite)
        return []
    built = [seed_input(target.sequence, seed, accession=accession, rfam_version=library.version)]
    twenty = twenty_input(
        target.sequence,
        seed,
        accession=accession,
        rfam_version=library.version,
        random_seed=twenty_seed(target),
    )
    if twenty is not None:
        built.append(twenty)
    return [(comparative, align_to_family(comparative, accession, library)) for comparative in built]


def store_comparative_inputs(
    *, target: Target, assignment: FamilyAssignment, library: RfamLibrary, aligned: list | None = None
) -> list[ComparativeInput]:
    """Store the (seed) and (20) inputs of an assigned target (built and aligned here unless ``aligned``
    comes from :func:`align_comparative_inputs`)."""
    if aligned is None:
        aligned = align_comparative_inputs(target=target, accession=assignment.accession, library=library)
    stored = []
    for comparative, aligned_input in aligned:
        row, _ = ComparativeInput.objects.get_or_create(
            target=target,
            kind=comparative.kind,
            rfam_version=library.version,
            defaults={
                "accession": assignment.accession,
                "query_name": aligned_input.query_name,
                "random_seed": comparative.random_seed,
                "sequences": comparative.to_fasta(),
                "alignment": aligned_input.to_stockholm(),
            },
        )
        stored.append(row)
    return stored


def targets_missing_family(*, library: RfamLibrary | None = None, limit: int = 500) -> list[int]:
    """Targets with no family assignment under the current Rfam version (new, lost, or a new release)."""
    library = library or rfam_library()
    return list(
        Target.objects.exclude(family_assignments__rfam_version=library.version)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
