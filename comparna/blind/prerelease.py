"""Saturday: read the wwPDB's pre-release sequence files and create the week's blind targets.

:func:`poll_prerelease` is idempotent per week: once a week has its targets (or its deadline passed without a
usable file) later calls do nothing. Every attempt is a :class:`~comparna.blind.models.PrereleaseRun` with
its outcome; a file that is not this week's yet, cannot be fetched, or is malformed or partial is recorded
as such, changes nothing, and the task retries with backoff (:mod:`comparna.blind.tasks`).

Kept: RNA polymers of standard ribonucleotides (modified residues count as their parent) longer than 20 nt
(:func:`ingest.pdb.prerelease.rna_candidate`), of entries not already in the database, and novel by the weekly
PDB set's rule against every chain of the reference set (≥ 90 % identity over ≥ 70 % of the longer sequence,
CD-HIT-EST-2D; SCIENCE.md §3); copies within the week collapse onto one target.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F

from comparna import clock, pipeline
from comparna.blind.models import BlindTarget, BlindWeek, PrereleaseRun
from comparna.blind.timeline import upcoming_release, week_times
from comparna.models import Dataset, PairDefinition, Target
from comparna.rna.redundancy import CdHitError, find_similar, remove_redundant
from ingest.models import PdbChain, PdbEntry
from ingest.pdb import prerelease as pr
from ingest.services.runs import recorded

BLIND_SLUG = "pdb-blind"

#: A file last modified this long before the week opens is last week's (publication may run a little early).
FRESHNESS_SLACK = dt.timedelta(hours=12)


class StaleFile(Exception):
    """The file at the address is not this week's yet."""


OUTCOMES = {
    StaleFile: PrereleaseRun.Outcome.STALE,
    pr.PrereleaseUnavailable: PrereleaseRun.Outcome.UNAVAILABLE,
    pr.PrereleaseFormatError: PrereleaseRun.Outcome.MALFORMED,
    CdHitError: PrereleaseRun.Outcome.UNAVAILABLE,
}
EXPECTED = {
    StaleFile: "not this week's file yet",
    pr.PrereleaseUnavailable: "could not fetch the pre-release file",
    pr.PrereleaseFormatError: "malformed or partial pre-release file",
    CdHitError: "novelty check (CD-HIT) failed",
}


@dataclass(frozen=True)
class PollResult:
    """What one call did: the week, the attempt recorded (None when there was nothing to do), and whether
    the task should try again later."""

    week: BlindWeek
    run: PrereleaseRun | None
    retry: bool
    message: str


def ensure_blind_dataset() -> Dataset:
    return Dataset.ensure(
        BLIND_SLUG,
        name="PDB blind track (pre-release)",
        kind=Dataset.Kind.PDB,
        description=(
            "RNA polymers announced by the wwPDB on Saturday for the next Wednesday's release, predicted "
            "before their coordinates exist: ribonucleotides only, longer than 20 nt, novel (not ≥ 90 % "
            "identical over ≥ 70 % of the longer sequence to any chain known before). Scored after the "
            "release on the observed residues of the released chain; ranked on the blind track pages."
        ),
        definitions=[PairDefinition.STANDARD, PairDefinition.EXTENDED],
    )


def ensure_week(release_date: dt.date) -> BlindWeek:
    times = week_times(release_date)
    week, _ = BlindWeek.objects.get_or_create(
        release_date=release_date,
        defaults={"opens_at": times.opens_at, "deadline": times.deadline, "release_at": times.release_at},
    )
    return week


def wwpdb_client() -> pr.WwpdbClient:
    return pr.WwpdbClient(settings.WWPDB_FILES_URL, timeout=settings.RCSB_TIMEOUT_S, retries=2)


def poll_prerelease(*, now: dt.datetime | None = None, client: pr.WwpdbClient | None = None) -> PollResult:
    """Import the pre-release files of the week whose release comes next, if it is due and not done."""
    now = now or clock.now()
    week = ensure_week(upcoming_release(now))
    if week.status != BlindWeek.Status.WAITING:
        return PollResult(week, None, False, f"week {week.release_date}: {week.get_status_display()}")
    if now < week.opens_at:
        return PollResult(week, None, False, f"week {week.release_date}: files appear at {week.opens_at}")
    if week.next_attempt_at and now < week.next_attempt_at and now < week.deadline:
        message = f"week {week.release_date}: next attempt at {week.next_attempt_at}"
        return PollResult(week, None, True, message)
    attempt = week.runs.count() + 1
    if now >= week.deadline:
        run = PrereleaseRun.objects.create(week=week, attempt=attempt, outcome=PrereleaseRun.Outcome.MISSED)
        with recorded(run, what="pre-release poll"):
            run.error = "the deadline passed before a usable pre-release file was read"
        BlindWeek.objects.filter(pk=week.pk).update(status=BlindWeek.Status.MISSED, note=run.error)
        week.refresh_from_db()
        return PollResult(week, run, False, run.error)
    run = PrereleaseRun.objects.create(week=week, attempt=attempt)
    client = client or wwpdb_client()
    with recorded(run, what="pre-release poll", expected=EXPECTED):
        try:
            _import(week=week, run=run, client=client, now=now)
        except tuple(OUTCOMES) as exc:
            run.outcome = next(o for kind, o in OUTCOMES.items() if isinstance(exc, kind))
            raise
        run.outcome = PrereleaseRun.Outcome.IMPORTED
    failed = run.status == PrereleaseRun.Status.FAILED
    if failed:
        # exponential backoff in clock time; the beat keeps calling, the attempts keep their distance
        wait = min(settings.BLIND_RETRY_BASE_S * 2 ** (attempt - 1), settings.BLIND_RETRY_MAX_S)
        BlindWeek.objects.filter(pk=week.pk).update(next_attempt_at=now + dt.timedelta(seconds=wait))
    week.refresh_from_db()
    return PollResult(week, run, failed, run.error or f"{run.done} polymers read")


def _fresh(file: pr.PrereleaseFile, week: BlindWeek) -> None:
    """Raise :class:`StaleFile` unless ``file`` is this week's."""
    if file.last_modified is not None:
        if file.last_modified < week.opens_at - FRESHNESS_SLACK:
            raise StaleFile(
                f"{file.name} was last modified {file.last_modified:%Y-%m-%d %H:%M} UTC, before this week's "
                f"publication ({week.opens_at:%Y-%m-%d %H:%M} UTC)"
            )
        return
    earlier = BlindWeek.objects.filter(release_date__lt=week.release_date).exclude(files={}).first()
    if earlier and earlier.files.get(file.name, {}).get("sha256") == file.sha256:
        raise StaleFile(f"{file.name} is identical to the week of {earlier.release_date} (no Last-Modified)")


def _import(*, week: BlindWeek, run: PrereleaseRun, client: pr.WwpdbClient, now: dt.datetime) -> None:
    plain = client.fetch(pr.SEQUENCE_FILE)
    run.url = plain.url
    _fresh(plain, week)
    try:
        canonical = client.fetch(pr.CANONICAL_FILE)
    except pr.PrereleaseUnavailable as exc:
        if exc.status != 404:
            raise
        canonical = None  # sequences with modified residues are then left out (no parent letters)
    else:
        _fresh(canonical, week)
    polymers = pr.parse_files(plain.text, canonical.text if canonical else None)
    run.total = len(polymers)
    ids = {p.pdb_id for p in polymers}
    released = set(PdbEntry.objects.filter(pdb_id__in=ids).values_list("pdb_id", flat=True))
    if len(released) * 2 > len(ids):
        raise StaleFile(f"{len(released)} of {len(ids)} entries are already released: an old file")

    skipped: list[dict] = []
    candidates: dict[str, str] = {}
    by_key = {}
    for p in polymers:
        key = f"{p.pdb_id}_{p.entity_id}"
        by_key[key] = p
        if p.pdb_id in released:
            skipped.append({"polymer": key, "kind": p.kind, "reason": "entry already released"})
            continue
        sequence, reason = pr.rna_candidate(p)
        if sequence is None:
            skipped.append({"polymer": key, "kind": p.kind, "length": p.length, "reason": reason})
        else:
            candidates[key] = sequence
    novel = _novel(candidates, skipped)

    files = {
        f.name: {
            "url": f.url,
            "sha256": f.sha256,
            "last_modified": f.last_modified.isoformat() if f.last_modified else None,
            "bytes": len(f.text.encode()),
        }
        for f in (plain, canonical)
        if f is not None
    }
    kinds: dict[str, int] = {}
    for p in polymers:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    with transaction.atomic():
        locked = BlindWeek.objects.select_for_update().get(pk=week.pk)
        if locked.status != BlindWeek.Status.WAITING:  # imported concurrently: nothing to do
            return
        dataset = ensure_blind_dataset()
        created = []
        for key, sequence in sorted(novel.items()):
            p = by_key[key]
            target = Target.objects.create(
                dataset=dataset,
                source_id=key,
                sequence=sequence,
                length=len(sequence),
                source_database="wwPDB pre-release",
                pdb_id=p.pdb_id,
                release_date=week.release_date,
                provenance={
                    "prerelease": {"pdb_id": p.pdb_id, "entity": p.entity_id, "announced": p.sequence},
                    "modified": [list(m) for m in p.modified],
                    "files": {name: meta["sha256"] for name, meta in files.items()},
                },
            )
            BlindTarget.objects.create(
                week=week, target=target, pdb_id=p.pdb_id, entity_id=p.entity_id, announced=p.sequence
            )
            created.append(target.pk)
        locked.status = BlindWeek.Status.OPEN
        locked.imported_at = now
        locked.files = files
        locked.summary = {
            "polymers": len(polymers),
            "entries": len(ids),
            "kinds": kinds,
            "targets": len(created),
            "skipped": skipped,
            "canonical_file": canonical is not None,
        }
        locked.save()
        if created:
            Dataset.objects.filter(pk=dataset.pk).update(version=F("version") + 1)
        run.done = len(polymers)
        # predictions of every active method, families (then comparative methods) follow by themselves
        pipeline.targets_created(target_ids=created)


def _novel(candidates: dict[str, str], skipped: list[dict]) -> dict[str, str]:
    """The candidates novel against the reference set, one per cluster of copies within the week."""
    if not candidates:
        return {}
    known = dict(
        PdbChain.objects.filter(role__in=[PdbChain.Role.REFERENCE, PdbChain.Role.TARGET]).values_list(
            "pk", "sequence"
        )
    )
    matches = (
        find_similar(candidates, {str(k): v for k, v in known.items()}, cdhit2d_path=settings.CDHIT_EST_2D)
        if known
        else {}
    )
    names = {
        str(c.pk): f"{c.entry.pdb_id}_{c.chain_id}"
        for c in PdbChain.objects.filter(pk__in=[int(v) for v in matches.values() if v]).select_related(
            "entry"
        )
    }
    novel = {}
    for key, sequence in candidates.items():
        match = matches.get(key)
        if match:
            skipped.append(
                {"polymer": key, "kind": pr.RNA, "length": len(sequence),
                 "reason": f"similar to a known chain ({names.get(match, match)})"}
            )
        else:
            novel[key] = sequence
    if len(novel) > 1:
        clusters = remove_redundant(novel, cdhit_path=settings.CDHIT_EST)
        for member, representative in sorted(clusters.member_of.items()):
            skipped.append(
                {"polymer": member, "kind": pr.RNA, "length": len(novel[member]),
                 "reason": f"copy of {representative} (same week)"}
            )
            novel.pop(member)
    return novel
