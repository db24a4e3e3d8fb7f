"""RNA STRAND: loading the prepared static benchmark into the database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F

from comparna import pipeline
from comparna.models import Dataset, ImportRun, PairDefinition, ReferenceStructure, Subset, Target
from comparna.rna.canonical import structure_to_text
from ingest.services.runs import recorded
from ingest.strand.prepare import KeptEntry, prepare_rnastrand

RNASTRAND_SLUG = "rnastrand"
RNASTRAND_SUBSETS = [
    ("all", "All RNAs", "Every RNA STRAND entry that passed the filters."),
    ("short", "Short (20-200 nt)", "Length 20 to 200 nucleotides."),
    ("medium", "Medium (201-800 nt)", "Length 201 to 800 nucleotides."),
    ("long", "Long (> 800 nt)", "Longer than 800 nucleotides."),
    ("pk", "Pseudoknotted", "The reference has at least two crossing pairs."),
    ("pk-short", "Pseudoknotted, short", "Pseudoknotted and 20 to 200 nucleotides."),
    ("pk-medium", "Pseudoknotted, medium", "Pseudoknotted and 201 to 800 nucleotides."),
    ("pk-long", "Pseudoknotted, long", "Pseudoknotted and longer than 800 nucleotides."),
]


def ensure_rnastrand_dataset() -> Dataset:
    dataset, _ = Dataset.objects.get_or_create(
        slug=RNASTRAND_SLUG,
        defaults={
            "name": "RNA STRAND v2.0",
            "kind": Dataset.Kind.STATIC,
            "description": (
                "Static benchmark on RNA STRAND v2.0 (Andronescu et al. 2008): length >= 20, A/C/G/U only, "
                "redundancy removed at 90 % identity / 70 % coverage of the longer sequence (CD-HIT-EST). "
                "Not blind: trained methods may have seen these structures."
            ),
            "definitions": [PairDefinition.EXTENDED],
        },
    )
    for order, (slug, name, description) in enumerate(RNASTRAND_SUBSETS):
        Subset.objects.get_or_create(
            dataset=dataset, slug=slug, defaults={"name": name, "description": description, "order": order}
        )
    return dataset


def import_rnastrand(*, path: Path, progress: Callable[[str, int, int], None] | None = None) -> ImportRun:
    """Import RNA STRAND from a tarball or directory; idempotent, one transaction per target.

    Entries already present are left untouched, so a second run changes nothing. Malformed files are
    reported in the run's summary and skipped. New targets enter the pipeline (predictions, families).
    """
    run = ImportRun.objects.create(kind="rnastrand", source=str(path))
    with recorded(run, what="RNA STRAND import"):
        prep = prepare_rnastrand(
            path,
            progress=(lambda done, total: progress("read", done, total)) if progress else None,
            cdhit_path=settings.CDHIT_EST,
        )
        dataset = ensure_rnastrand_dataset()
        subsets = {s.slug: s for s in dataset.subsets.all()}
        existing = set(Target.objects.filter(dataset=dataset).values_list("source_id", flat=True))
        run.total = len(prep.kept)
        run.save(update_fields=["total"])
        created = 0
        for n, entry in enumerate(prep.kept, start=1):
            if entry.entry_id not in existing:
                store_strand_target(dataset=dataset, subsets=subsets, entry=entry)
                created += 1
            if progress:
                progress("store", n, len(prep.kept))
            if n % 200 == 0:
                ImportRun.objects.filter(pk=run.pk).update(done=n)
        if created:
            Dataset.objects.filter(pk=dataset.pk).update(version=F("version") + 1)
            new_ids = list(
                Target.objects.filter(dataset=dataset)
                .exclude(source_id__in=existing)
                .values_list("pk", flat=True)
            )
            pipeline.targets_created(target_ids=new_ids)
        run.done = len(prep.kept)
        run.summary = {
            "created": created,
            "already_present": len(prep.kept) - created,
            "steps": dict(prep.steps),
            "excluded": prep.exclusion_counts(),
            "malformed": [f"{e.entry_id}: {e.detail}" for e in prep.excluded if e.reason == "malformed"],
            "subsets": dict(prep.subset_counts),
            "cdhit": " ".join(prep.cdhit_command),
            "cdhit_version": prep.cdhit_version,
        }
    return run


@transaction.atomic
def store_strand_target(*, dataset: Dataset, subsets: dict[str, Subset], entry: KeptEntry) -> Target:
    """Write one kept entry, its reference and subsets, all or nothing."""
    raw = entry.entry
    structure = raw.structure
    target = Target.objects.create(
        dataset=dataset,
        source_id=raw.entry_id,
        sequence=entry.sequence,
        length=len(entry.sequence),
        source_database=raw.source_db or "",
        rna_class=raw.rna_class or "",
        organism=" ".join(x for x in (raw.organism, raw.strain) if x),
        pdb_id=raw.pdb_id or "",
        provenance={
            "source": "RNA STRAND v2.0",
            "header": raw.header,
            "external_file": raw.external_file,
            "external_id": raw.external_id,
            "ndb_id": raw.ndb_id,
            "molecules": raw.molecules,
            "redundant_members": list(entry.redundant_members),
        },
    )
    ReferenceStructure.objects.create(
        target=target,
        definition=PairDefinition.EXTENDED,
        pairs=structure_to_text(structure),
        n_pairs=len(structure.pairs),
        pseudoknotted=structure.is_pseudoknotted,
        has_multiplets=structure.has_multiplets,
    )
    for slug in entry.subsets:
        subsets[slug].targets.add(target)
    return target
