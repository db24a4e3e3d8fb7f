"""Ingest services: loading prepared references into the database."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from comparna.models import Dataset, ImportRun, PairDefinition, ReferenceStructure, Subset, Target
from comparna.rna.canonical import structure_to_text

log = logging.getLogger(__name__)

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
    reported in the run's summary and skipped.
    """
    from django.conf import settings

    from ingest.strand.prepare import prepare_rnastrand

    run = ImportRun.objects.create(kind="rnastrand", source=str(path))
    try:
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
            enqueue_family_assignment(new_ids)
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
        run.status = ImportRun.Status.DONE
    except Exception as exc:
        log.exception("RNA STRAND import failed")
        run.status = ImportRun.Status.FAILED
        run.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        run.finished_at = timezone.now()
        run.save()
    return run


@transaction.atomic
def store_strand_target(*, dataset: Dataset, subsets: dict[str, Subset], entry) -> Target:
    """Write one kept entry (``prepare.KeptEntry``), its reference and subsets, all or nothing."""
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


# --------------------------------------------------------------------------------------------- PDB
PDB_SLUG = "pdb"
PDB_SUBSETS = [
    ("all", "All RNAs", "", "Every novel PDB chain with at least one standard base pair."),
    ("pk-standard", "Pseudoknotted (standard pairs)", "standard", "Standard pairs of the reference cross."),
    ("pk-extended", "Pseudoknotted (extended pairs)", "extended", "Extended pairs of the reference cross."),
]


def ensure_pdb_dataset() -> Dataset:
    dataset, _ = Dataset.objects.get_or_create(
        slug=PDB_SLUG,
        defaults={
            "name": "PDB (weekly, blind)",
            "kind": Dataset.Kind.PDB,
            "description": (
                "RNA chains newly released by the PDB every week: ribonucleotides only, longer than 20 nt, "
                "no backbone break, base pairs annotated from 3D (pairs present in all models), at least one "
                "standard pair, and not similar (90 % identity over 70 % of the longer sequence, CD-HIT-EST) "
                "to any chain known before."
            ),
            "definitions": [PairDefinition.STANDARD, PairDefinition.EXTENDED],
        },
    )
    for order, (slug, name, definition, description) in enumerate(PDB_SUBSETS):
        Subset.objects.get_or_create(
            dataset=dataset,
            slug=slug,
            defaults={"name": name, "definition": definition, "description": description, "order": order},
        )
    return dataset


def rcsb_client():
    from django.conf import settings

    from ingest.pdb.rcsb import RcsbClient

    return RcsbClient(
        settings.RCSB_SEARCH_URL,
        settings.RCSB_DOWNLOAD_URL,
        timeout=settings.RCSB_TIMEOUT_S,
        retries=settings.RCSB_RETRIES,
    )


def poll_pdb(
    *,
    since,
    until,
    client=None,
    backfill: bool | None = None,
    progress: Callable[[str, int, int], None] | None = None,
):
    """Search the RCSB for RNA entries released in [since, until], process the new ones, store outcomes.

    Entries in a final state are skipped; failed downloads are retried by later polls. Each entry is
    written in one transaction (entry, chains, targets, references), so nothing is half-written. New
    targets are queued for every active predictor once committed.
    """
    from django.conf import settings

    from ingest.models import PdbEntry, PollRun
    from ingest.pdb.pipeline import fetch_and_annotate
    from ingest.pdb.rcsb import SearchFailed
    from ingest.pdb.windows import release_weeks

    if backfill is None:
        backfill = until < settings.PDB_BENCHMARK_START
    client = client or rcsb_client()
    run = PollRun.objects.create(since=since, until=until, backfill=backfill)
    directory = Path(settings.PDB_DOWNLOAD_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        found: list[tuple[str, object]] = []
        for start, end, release_day in release_weeks(since, until):
            for pdb_id in client.search_rna_entries(start, end).identifiers:
                found.append((pdb_id.upper(), release_day))
        run.found = len(found)
        final = set(
            PdbEntry.objects.filter(pdb_id__in=[p for p, _ in found])
            .exclude(status=PdbEntry.Status.DOWNLOAD_FAILED)
            .values_list("pdb_id", flat=True)
        )
        todo = [(p, day) for p, day in found if p not in final]
        run.skipped = len(found) - len(todo)
        run.new = len(todo)
        run.save()
        created_targets = []
        for n, (pdb_id, release_day) in enumerate(todo, start=1):
            outcome = fetch_and_annotate(client, pdb_id, directory)
            created_targets += store_pdb_outcome(
                run=run, outcome=outcome, release_day=release_day, backfill=backfill
            )
            if outcome.status != "ok":
                run.failed += 1
            run.done = n
            run.targets_created = len(created_targets)
            run.save(update_fields=["done", "failed", "targets_created"])
            if progress:
                progress("entries", n, len(todo))
        run.status = PollRun.Status.DONE
    except SearchFailed as exc:
        run.status = PollRun.Status.FAILED
        run.error = f"search failed: {exc}"
    except Exception as exc:
        log.exception("PDB poll failed")
        run.status = PollRun.Status.FAILED
        run.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        run.finished_at = timezone.now()
        run.save()
    if run.targets_created:
        from predictors.services import queue_predictions

        new_targets = Target.objects.filter(pdb_chain__entry__poll=run)
        queue_predictions(targets=new_targets)
        enqueue_family_assignment(list(new_targets.values_list("pk", flat=True)))
    return run


def classify_chains(*, chains: list, backfill: bool) -> dict[str, tuple[str, str, str | None]]:
    """Role of each annotated chain: (role, reason, similar_to "PDB_CHAIN" key or None).

    Novelty (SCIENCE.md §3): a chain similar to a known chain (≥ 90 % identity over ≥ 70 % of the
    longer sequence, CD-HIT-EST-2D) is ignored; the others are benchmarked and join the known set. Within
    one entry, identical copies (e.g. homodimers) collapse onto one representative.
    """
    from ingest.models import PdbChain

    roles: dict[str, tuple[str, str, str | None]] = {}
    candidates = {}
    for chain in chains:
        if chain.excluded:
            roles[chain.chain] = (PdbChain.Role.EXCLUDED, chain.excluded, None)
        elif backfill:
            roles[chain.chain] = (PdbChain.Role.REFERENCE, "known before the benchmark start", None)
        else:
            candidates[chain.chain] = chain.sequence
    if not candidates:
        return roles
    from django.conf import settings

    from comparna.rna.redundancy import find_similar, remove_redundant

    known = {
        f"{pk}": seq
        for pk, seq in PdbChain.objects.filter(
            role__in=[PdbChain.Role.REFERENCE, PdbChain.Role.TARGET]
        ).values_list("pk", "sequence")
    }
    matches = find_similar(candidates, known, cdhit2d_path=settings.CDHIT_EST_2D) if known else {}
    novel = {}
    for key, seq in candidates.items():
        match = matches.get(key)
        if match is not None:
            roles[key] = (PdbChain.Role.SIMILAR, "similar to a known chain", match)
        else:
            novel[key] = seq
    if len(novel) > 1:
        clusters = remove_redundant(novel, cdhit_path=settings.CDHIT_EST)
        for removed, representative in clusters.member_of.items():
            roles[removed] = (
                PdbChain.Role.SIMILAR,
                f"copy of chain {representative} of the same entry",
                None,
            )
            novel.pop(removed)
    for key in novel:
        roles[key] = (PdbChain.Role.TARGET, "", None)
    return roles


def store_pdb_outcome(*, run, outcome, release_day, backfill: bool) -> list[Target]:
    """Record one entry's outcome; for an annotated entry store its chains and create novel targets."""
    from ingest.models import PdbChain, PdbEntry

    annotation = outcome.annotation
    roles = classify_chains(chains=list(annotation.chains), backfill=backfill) if annotation else {}
    created = []
    with transaction.atomic():
        entry, _ = PdbEntry.objects.update_or_create(
            pdb_id=outcome.pdb_id,
            defaults={
                "poll": run,
                "status": outcome.status,
                "reason": outcome.reason or "",
                "path": str(outcome.path or ""),
                "attempts": outcome.attempts,
                "model_count": annotation.model_count if annotation else 0,
                "seconds": outcome.seconds,
            },
        )
        if annotation is None:
            return created
        dataset = ensure_pdb_dataset()
        subsets = {s.slug: s for s in dataset.subsets.all()}
        for chain in annotation.chains:
            role, reason, similar = roles[chain.chain]
            row = PdbChain.objects.create(
                entry=entry,
                chain_id=chain.chain,
                sequence=chain.sequence,
                length=chain.length,
                role=role,
                reason=reason,
                author_numbers=[str(a) for a in chain.author_numbers],
                similar_to_id=int(similar) if similar and similar.isdigit() else None,
            )
            if role == PdbChain.Role.TARGET:
                target = store_pdb_target(
                    dataset=dataset, subsets=subsets, entry=entry, chain=chain, release_day=release_day
                )
                row.target = target
                row.save(update_fields=["target"])
                created.append(target)
        if created:
            Dataset.objects.filter(pk=dataset.pk).update(version=F("version") + 1)
    return created


def store_pdb_target(*, dataset, subsets, entry, chain, release_day) -> Target:
    target = Target.objects.create(
        dataset=dataset,
        source_id=f"{entry.pdb_id}_{chain.chain}",
        sequence=chain.sequence,
        length=chain.length,
        source_database="RCSB PDB",
        pdb_id=entry.pdb_id,
        chain_id=chain.chain,
        release_date=release_day,
        provenance={
            "pdb_id": entry.pdb_id,
            "chain": chain.chain,
            "models": entry.model_count,
            "author_numbers": [str(a) for a in chain.author_numbers],
            "modified": [list(m) for m in chain.modified],
            "annotator": "RNApolis annotator (Leontis-Westhof classes), pairs present in all models",
        },
    )
    subsets["all"].targets.add(target)
    for definition, structure, pairs in (
        (PairDefinition.STANDARD, chain.standard_structure(), chain.standard_pairs),
        (PairDefinition.EXTENDED, chain.extended_structure(), chain.extended_pairs),
    ):
        ReferenceStructure.objects.create(
            target=target,
            definition=definition,
            pairs=structure_to_text(structure),
            n_pairs=len(structure.pairs),
            pseudoknotted=structure.is_pseudoknotted,
            has_multiplets=structure.has_multiplets,
            classes=[list(p) for p in pairs],
        )
        if structure.is_pseudoknotted:
            subsets[f"pk-{definition}"].targets.add(target)
    return target


def next_poll_window(*, today=None):
    """(since, until) for the weekly poll: from the day after the last successful poll up to today."""
    from django.conf import settings

    from ingest.models import PollRun

    today = today or timezone.now().date()
    last = PollRun.objects.filter(status=PollRun.Status.DONE, backfill=False).order_by("-until").first()
    since = last.until + dt.timedelta(days=1) if last else settings.PDB_BENCHMARK_START
    return since, today


# ------------------------------------------------------------------------------- Rfam families
def rfam_library():
    from django.conf import settings

    from ingest.rfam.library import resolve_library

    return resolve_library(settings.RFAM_LIBRARY)


def twenty_seed(target: Target) -> int:
    """The recorded random seed of a target's (20) draw: stable per target and settings seed."""
    from django.conf import settings

    digest = hashlib.sha256(f"{settings.RANKING_SEED}:{target.dataset.slug}:{target.source_id}".encode())
    return int.from_bytes(digest.digest()[:4], "big")


def assign_families(*, targets, library=None) -> dict[int, object]:
    """Assign an Rfam family to every target not yet assigned under the library's version (SCIENCE.md §4).

    One ``cmscan`` run for the batch; a target without a hit covering ≥ 80 % of it gets a row with an
    empty accession. Assigned targets get their (seed) and (20) inputs aligned by ``cmalign`` and stored.
    Returns {target pk: FamilyAssignment row}.
    """
    from ingest.models import FamilyAssignment
    from ingest.rfam.cmscan import scan_sequences

    library = library or rfam_library()
    targets = [t for t in targets if not t.family_assignments.filter(rfam_version=library.version).exists()]
    if not targets:
        return {}
    hits = scan_sequences({str(t.pk): t.sequence for t in targets}, library)
    rows = {}
    for target in targets:
        hit = hits.get(str(target.pk))
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
            if hit is not None:
                store_comparative_inputs(target=target, assignment=row, library=library)
        rows[target.pk] = row
    return rows


def store_comparative_inputs(*, target: Target, assignment, library) -> list:
    """Build, align (cmalign) and store the (seed) and (20) inputs of an assigned target."""
    from ingest.models import ComparativeInput
    from ingest.rfam.inputs import align_to_family, seed_input, twenty_input

    seed = library.read_seed(assignment.accession)
    if seed is None:  # a model without a seed alignment (e.g. tRNA-Sec in the testsuite)
        return []
    built = [seed_input(target.sequence, seed, accession=assignment.accession, rfam_version=library.version)]
    twenty = twenty_input(
        target.sequence,
        seed,
        accession=assignment.accession,
        rfam_version=library.version,
        random_seed=twenty_seed(target),
    )
    if twenty is not None:
        built.append(twenty)
    stored = []
    for comparative in built:
        aligned = align_to_family(comparative, assignment.accession, library)
        row, _ = ComparativeInput.objects.get_or_create(
            target=target,
            kind=comparative.kind,
            rfam_version=library.version,
            defaults={
                "accession": assignment.accession,
                "query_name": aligned.query_name,
                "random_seed": comparative.random_seed,
                "sequences": comparative.to_fasta(),
                "alignment": aligned.to_stockholm(),
            },
        )
        stored.append(row)
    return stored


def job_alignment(comparative_input, *, query_name: str = "query") -> str:
    """The stored alignment with the query row renamed to the name comparative specs use (``--query``)."""
    from comparna.rna.stockholm import rename_sequence

    return rename_sequence(comparative_input.alignment, comparative_input.query_name, query_name)


def enqueue_family_assignment(target_ids: list[int], *, batch: int = 100) -> None:
    """After commit, send family-assignment tasks for new targets in batches (one cmscan run each)."""
    from comparna.services.dispatch import send_after_commit
    from ingest.tasks import assign_families_task

    ids = sorted(target_ids)
    send_after_commit(assign_families_task, [(ids[k : k + batch],) for k in range(0, len(ids), batch)])


def targets_missing_family(*, library=None, limit: int = 500) -> list[int]:
    """Targets with no family assignment under the current Rfam version (new, lost, or a new release)."""
    library = library or rfam_library()
    return list(
        Target.objects.exclude(family_assignments__rfam_version=library.version)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
