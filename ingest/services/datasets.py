"""The generic dataset import: a declared benchmark set (``ingest.datasets.catalogue``) into the database.

``import_dataset(name=...)`` reads the declared source (or another file of the same format), applies the
declaration's filters and redundancy removal, and stores every kept entry as a target with its reference
and subsets, one transaction per target, plus one :class:`~comparna.models.DatasetEntry` per entry read
(kept or not, with the reason). New targets enter the pipeline like the PDB poll's (``pipeline.
targets_created``): every current method is queued on them and their Rfam family is assigned.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F

from comparna import pipeline
from comparna.models import (
    Dataset,
    DatasetEntry,
    ImportRun,
    PairDefinition,
    ReferenceStructure,
    Subset,
    Target,
)
from comparna.rna.canonical import structure_to_text
from ingest.datasets.catalogue import get_declaration, locate_source
from ingest.datasets.declaration import (
    DatasetDeclaration,
    KeptEntry,
    Preparation,
    file_sha256,
    prepare_dataset,
)
from ingest.datasets.pdb_derived import PdbDerivedDeclaration, prepare_pdb_derived
from ingest.services.runs import recorded

__all__ = ["SourceMismatch", "ensure_dataset", "import_dataset", "store_target"]

Progress = Callable[[str, int, int], None]


class SourceMismatch(ValueError):
    """The declared source file is not the one declared (its sha256 differs)."""


def dataset_provenance(decl: DatasetDeclaration) -> dict:
    """What the dataset row records about its declaration (shown on the dataset pages)."""
    return {
        "declaration": decl.name,
        "title": decl.title,
        "source": decl.source,
        "sha256": decl.sha256,
        "format": decl.fmt,
        "citation": decl.citation,
        "url": decl.url,
        "licence": decl.licence,
        "provenance": decl.provenance,
        "filters": {
            "min_length": decl.min_length,
            "alphabet": "ACGU after upper-casing and T->U",
            "redundancy": f"CD-HIT-EST >= {decl.identity:g} identity, >= {decl.coverage_longer:g} coverage "
            "of the longer sequence; the longest of each cluster is kept (ties: smallest id)",
        },
        "families": list(decl.families),
        **_pdb_derived_provenance(decl),
    }


def _pdb_derived_provenance(decl: DatasetDeclaration) -> dict:
    """What a PDB-derived declaration adds: its group on the pages, its cluster, its queue priority
    (``predictors.services.schedule_ranks`` reads ``schedule_priority``) and what it is and is not."""
    if not isinstance(decl, PdbDerivedDeclaration):
        return {}
    return {
        "group": "PDB-derived",
        "cluster": decl.cluster_name,
        "schedule_priority": decl.schedule_priority,
        "what_it_is": decl.what_it_is,
        "what_it_is_not": decl.what_it_is_not,
        "definitions": list(decl.definitions),
        "filters_extra": {reason: decl.reasons[reason] for reason in ("pdb_rules", "no_pairs")},
    }


def ensure_dataset(decl: DatasetDeclaration) -> Dataset:
    """The dataset row and subsets of a declaration (created when missing; existing rows are kept)."""
    dataset = Dataset.ensure(
        decl.name,
        name=decl.title,
        kind=Dataset.Kind.STATIC,
        description=decl.description,
        definitions=list(decl.definitions),
        provenance=dataset_provenance(decl),
        subsets=[
            {"slug": s.slug, "name": s.name, "description": s.description,
             **({"definition": s.definition} if getattr(s, "definition", "") else {})}
            for s in decl.subsets()
        ],
    )
    if not dataset.provenance:  # a dataset imported before declarations existed
        Dataset.objects.filter(pk=dataset.pk).update(provenance=dataset_provenance(decl))
    return dataset


def _source(decl: DatasetDeclaration, path: Path | None) -> tuple[Path, str, bool]:
    """(file, its sha256, whether it is the declared file)."""
    if path is None:
        path = locate_source(decl)
        digest = file_sha256(path)
        if digest != decl.sha256:
            raise SourceMismatch(
                f"{path} has sha256 {digest}, not the declared {decl.sha256}: refusing to import a different "
                "file as the declared dataset (pass it explicitly to import it anyway)"
            )
        return path, digest, True
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    return path, file_sha256(path), False


def import_dataset(*, name: str, path: Path | None = None, progress: Progress | None = None) -> ImportRun:
    """Import the declared dataset ``name`` from its declared source or from ``path``; idempotent.

    Entries already present are left untouched, so a second run changes nothing. Malformed entries are
    reported in the run's summary and skipped. New targets enter the pipeline (predictions, families).

    Raises
    ------
    KeyError
        For an undeclared name (before any run is recorded).
    """
    decl = get_declaration(name)
    run = ImportRun.objects.create(kind=decl.name, source=str(path or decl.source))
    with recorded(run, what=f"{decl.title} import"):
        source, digest, declared = _source(decl, path)
        ImportRun.objects.filter(pk=run.pk).update(source=str(source))
        prepare = prepare_pdb_derived if isinstance(decl, PdbDerivedDeclaration) else prepare_dataset
        prep = prepare(
            decl,
            source,
            progress=(lambda done, total: progress("read", done, total)) if progress else None,
            cdhit_path=settings.CDHIT_EST,
        )
        dataset = ensure_dataset(decl)
        created = store_preparation(dataset=dataset, prep=prep, run=run, progress=progress)
        run.done = len(prep.kept)
        run.summary = {
            "created": created,
            "already_present": len(prep.kept) - created,
            "steps": dict(prep.steps),
            "excluded": prep.exclusion_counts(),
            "malformed": [f"{e.entry_id}: {e.detail}" for e in prep.excluded if e.reason == "malformed"],
            "subsets": dict(prep.subset_counts),
            "families": dict(prep.family_counts),
            "cdhit": " ".join(prep.cdhit_command),
            "cdhit_version": prep.cdhit_version,
            "source_sha256": digest,
            "declared_source": declared,
        }
    return run


def store_preparation(
    *, dataset: Dataset, prep: Preparation, run: ImportRun, progress: Progress | None
) -> int:
    """Store the kept entries not yet present and every entry's record; returns the targets created."""
    subsets = {s.slug: s for s in dataset.subsets.all()}
    existing = set(Target.objects.filter(dataset=dataset).values_list("source_id", flat=True))
    run.total = len(prep.kept)
    run.save(update_fields=["total"])
    created = 0
    for n, entry in enumerate(prep.kept, start=1):
        if entry.entry_id not in existing:
            store_target(dataset=dataset, subsets=subsets, entry=entry)
            created += 1
        if progress:
            progress("store", n, len(prep.kept))
        if n % 200 == 0:
            ImportRun.objects.filter(pk=run.pk).update(done=n)
    _store_entries(dataset=dataset, prep=prep)
    if created:
        Dataset.objects.filter(pk=dataset.pk).update(version=F("version") + 1)
        new_ids = list(
            Target.objects.filter(dataset=dataset)
            .exclude(source_id__in=existing)
            .values_list("pk", flat=True)
        )
        pipeline.targets_created(target_ids=new_ids)
    return created


@transaction.atomic
def _store_entries(*, dataset: Dataset, prep: Preparation) -> None:
    """One DatasetEntry per entry read (kept or excluded); entries already recorded are kept as they are."""
    known = set(DatasetEntry.objects.filter(dataset=dataset).values_list("source_id", flat=True))
    targets = dict(Target.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    rows = [
        DatasetEntry(dataset=dataset, source_id=k.entry_id, sequence=k.sequence, family=k.family,
                     outcome=DatasetEntry.Outcome.KEPT, target_id=targets.get(k.entry_id))
        for k in prep.kept if k.entry_id not in known
    ]
    seen = {k.entry_id for k in prep.kept} | known
    for e in prep.excluded:
        if e.entry_id in seen:  # a duplicate id in the input: the first record stands
            continue
        seen.add(e.entry_id)
        rows.append(
            DatasetEntry(dataset=dataset, source_id=e.entry_id[:200], sequence=e.sequence, family=e.family,
                         outcome=e.reason, detail=e.detail, representative=e.representative or "")
        )
    DatasetEntry.objects.bulk_create(rows, batch_size=1000)


@transaction.atomic
def store_target(*, dataset: Dataset, subsets: dict[str, Subset], entry: KeptEntry) -> Target:
    """Write one kept entry, its reference and subsets, all or nothing."""
    raw = entry.entry
    cluster = getattr(raw, "cluster", "")
    target = Target.objects.create(
        dataset=dataset,
        source_id=raw.entry_id,
        sequence=entry.sequence,
        length=len(entry.sequence),
        source_database=raw.source_database,
        rna_class=raw.rna_class,
        family=entry.family,
        family_source="dataset" if entry.family else "",
        organism=raw.organism,
        pdb_id=raw.pdb_id,
        provenance={
            "source": dataset.name,
            **raw.provenance,
            "redundant_members": list(entry.redundant_members),
            # the dataset's own cluster (RNA3DB component): the unit of the clustered statistics
            **({"cluster": cluster} if cluster else {}),
            **({"sets": list(raw.groups)} if getattr(raw, "groups", ()) else {}),
        },
    )
    for definition, struct, classes in _references(dataset, raw):
        ReferenceStructure.objects.create(
            target=target,
            definition=definition,
            pairs=structure_to_text(struct),
            n_pairs=len(struct.pairs),
            pseudoknotted=struct.is_pseudoknotted,
            has_multiplets=struct.has_multiplets,
            classes=[list(p) for p in classes] if classes else None,
        )
    for slug in entry.subsets:
        subsets[slug].targets.add(target)
    return target


def _references(dataset: Dataset, raw) -> list[tuple[str, object, tuple]]:
    """(definition, structure, Leontis-Westhof classes) of each definition the dataset is scored on: the
    entry's structure is the extended one; a PDB-derived entry also carries its standard one."""
    if PairDefinition.STANDARD not in dataset.definitions or getattr(raw, "standard", None) is None:
        return [(PairDefinition.EXTENDED, raw.structure, getattr(raw, "extended_classes", ()))]
    return [
        (PairDefinition.STANDARD, raw.standard, raw.standard_classes),
        (PairDefinition.EXTENDED, raw.structure, raw.extended_classes),
    ]
