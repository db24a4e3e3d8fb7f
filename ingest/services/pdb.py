"""The weekly PDB poll: new RNA entries from the RCSB, annotated, checked for novelty, stored as targets."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from comparna import pipeline
from comparna.models import Dataset, PairDefinition, ReferenceStructure, Target
from comparna.rna.canonical import structure_to_text
from comparna.rna.redundancy import find_similar, remove_redundant
from ingest.models import PdbChain, PdbEntry, PollRun
from ingest.pdb.annotate import SINGLE_CHAIN_RULE
from ingest.pdb.pipeline import EntryOutcome, fetch_and_annotate
from ingest.pdb.rcsb import RcsbClient, SearchFailed
from ingest.pdb.windows import release_weeks
from ingest.services.runs import recorded

PDB_SLUG = "pdb"
#: Rolling time windows of the weekly set (slug, name, days): CAMEO-style rankings of the recent weeks only,
#: their memberships moved on by :func:`refresh_release_windows` after every poll and every day.
RELEASE_WINDOWS = [
    ("last-4-weeks", "Released in the last 4 weeks", 28),
    ("last-6-months", "Released in the last 6 months", 182),
    ("last-year", "Released in the last year", 365),
]
PDB_SUBSETS = [
    ("all", "All RNAs", "", "Every novel PDB chain with at least one standard base pair."),
    *(
        (slug, name, "", f"Chains released in the {days} days up to the newest ranking (a rolling window).")
        for slug, name, days in RELEASE_WINDOWS
    ),
    ("pk-standard", "Pseudoknotted (standard pairs)", "standard", "Standard pairs of the reference cross."),
    ("pk-extended", "Pseudoknotted (extended pairs)", "extended", "Extended pairs of the reference cross."),
]


def ensure_pdb_dataset() -> Dataset:
    return Dataset.ensure(
        PDB_SLUG,
        name="PDB (weekly, blind)",
        kind=Dataset.Kind.PDB,
        description=(
            "RNA chains newly released by the PDB every week: ribonucleotides only, longer than 20 nt, "
            "no backbone break, base pairs annotated from 3D (pairs present in all models), at least one "
            "standard pair, and not similar (90 % identity over 70 % of the longer sequence, CD-HIT-EST) "
            "to any chain known before."
        ),
        definitions=[PairDefinition.STANDARD, PairDefinition.EXTENDED],
        subsets=[
            {"slug": slug, "name": name, "definition": definition, "description": description}
            for slug, name, definition, description in PDB_SUBSETS
        ],
    )


def refresh_release_windows(*, today: dt.date | None = None) -> dict[str, int]:
    """Move the rolling release windows of the PDB set on to ``today`` (the instance's clock): each
    window subset holds the targets released in its last N days. Returns the size of each window; a
    window whose members did not change is left alone (its ranking is not recomputed)."""
    from comparna import clock

    if not Dataset.objects.filter(slug=PDB_SLUG).exists():
        return {}
    dataset = ensure_pdb_dataset()
    today = today or clock.today()
    sizes = {}
    for slug, _, days in RELEASE_WINDOWS:
        subset = dataset.subsets.get(slug=slug)
        wanted = set(
            Target.objects.filter(dataset=dataset, release_date__gt=today - dt.timedelta(days=days))
            .values_list("pk", flat=True)
        )
        current = set(subset.targets.values_list("pk", flat=True))
        if wanted != current:
            with transaction.atomic():
                subset.targets.remove(*(current - wanted))
                subset.targets.add(*(wanted - current))
        sizes[slug] = len(wanted)
    return sizes


def rcsb_client() -> RcsbClient:
    return RcsbClient(
        settings.RCSB_SEARCH_URL,
        settings.RCSB_DOWNLOAD_URL,
        timeout=settings.RCSB_TIMEOUT_S,
        retries=settings.RCSB_RETRIES,
    )


def poll_pdb(
    *,
    since: dt.date,
    until: dt.date,
    client: RcsbClient | None = None,
    backfill: bool | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> PollRun:
    """Search the RCSB for RNA entries released in [since, until], process the new ones, store outcomes.

    Entries in a final state are skipped; failed downloads are retried by later polls. Each entry is
    written in one transaction (entry, chains, targets, references), so nothing is half-written. New
    targets enter the pipeline (predictions of every active method, families) once committed.
    """
    if backfill is None:
        backfill = until < settings.PDB_BENCHMARK_START
    client = client or rcsb_client()
    run = PollRun.objects.create(since=since, until=until, backfill=backfill)
    directory = Path(settings.PDB_DOWNLOAD_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    with recorded(run, what="PDB poll", expected={SearchFailed: "search failed"}):
        found: list[tuple[str, dt.date]] = []
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
        run.new = run.total = len(todo)
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
    refresh_release_windows()  # the instance's today, not the polled window's end
    if run.targets_created:
        new_targets = Target.objects.filter(pdb_chain__entry__poll=run)
        pipeline.targets_created(target_ids=list(new_targets.values_list("pk", flat=True)))
    return run


def classify_chains(*, chains: list, backfill: bool) -> dict[str, tuple[str, str, str | None]]:
    """Role of each annotated chain: (role, reason, similar_to "PDB_CHAIN" key or None).

    Novelty (SCIENCE.md §3): a chain similar to a known chain (≥ 90 % identity over ≥ 70 % of the
    longer sequence, CD-HIT-EST-2D) is ignored; the others are benchmarked and join the known set. Within
    one entry, identical copies (e.g. homodimers) collapse onto one representative.
    """
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


def store_pdb_outcome(
    *, run: PollRun, outcome: EntryOutcome, release_day: dt.date, backfill: bool
) -> list[Target]:
    """Record one entry's outcome; for an annotated entry store its chains and create novel targets."""
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
                similar_to_id=int(similar) if similar and similar.isascii() and similar.isdigit() else None,
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
            # pairs with other strands are recorded, not part of the reference (SINGLE_CHAIN_RULE)
            "inter_chain_pairs": chain.inter_chain_json(),
            "incomplete_bases": chain.incomplete_json(),
            "single_chain_rule": SINGLE_CHAIN_RULE,
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


def next_poll_window(*, today: dt.date | None = None) -> tuple[dt.date, dt.date]:
    """(since, until) for the weekly poll: from the day after the last successful poll up to today."""
    today = today or timezone.now().date()
    last = PollRun.objects.filter(status=PollRun.Status.DONE, backfill=False).order_by("-until").first()
    since = last.until + dt.timedelta(days=1) if last else settings.PDB_BENCHMARK_START
    return since, today
