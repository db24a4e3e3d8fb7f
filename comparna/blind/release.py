"""After Wednesday's release: link each blind target to its released chain(s), or close or hold it.

The weekly PDB poll (``ingest``) downloads, extracts and annotates the released entries; its end sends
:func:`comparna.blind.tasks.link_released_task` (by name, through :mod:`comparna.pipeline`). For each open
target of a released week:

- its entry was processed by the poll (``PdbEntry`` ok): the stored file is read again, its chains are
  annotated, the chains of the announced entity (and, failing that, any chain of the entry) are aligned to
  the announced sequence (:mod:`comparna.rna.seqmap`); a chain at ``BLIND_MIN_IDENTITY`` or more is linked,
  and the target is scored against the first usable one (the weekly set's own target chain if it is one of
  them) — or closed with the chain's exclusion (too short, backbone breaks, no standard pair, ...) when none
  is usable, or "no chain matches" when none aligns;
- the poll found the entry gone (HTTP 404) or unreadable: closed with that reason;
- the poll has covered the release date without finding the entry: the RCSB's holdings status decides —
  withdrawn or removed: closed; on hold: held (checked again by the daily sweep, closed after
  ``BLIND_HOLD_GRACE_DAYS``); released but not found: checked again (the search index may lag), closed after
  the same grace;
- otherwise the target waits for the poll.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction

from comparna import clock
from comparna.blind.models import BlindTarget, BlindWeek
from comparna.blind.scoring import score_target
from comparna.rna.seqmap import chain_pairs_on_target, map_chain
from ingest.models import PdbChain, PdbEntry, PollRun
from ingest.pdb.annotate import annotate_entry
from ingest.pdb.extract import StructureFileError, extract
from ingest.pdb.holdings import CURRENT, REMOVED, UNKNOWN, UNRELEASED, HoldingsClient, HoldingsError

log = logging.getLogger(__name__)

WITHDRAWN_CODES = {"WDRN"}


def holdings_client() -> HoldingsClient:
    return HoldingsClient(settings.RCSB_DATA_URL, timeout=settings.RCSB_TIMEOUT_S, retries=2)


def released_weeks(now: dt.datetime):
    return BlindWeek.objects.filter(
        status__in=[BlindWeek.Status.COMMITTED, BlindWeek.Status.RELEASED], release_at__lte=now
    ).order_by("release_date")


def link_released(
    *, now: dt.datetime | None = None, holdings: HoldingsClient | None = None, ask_holdings: bool = True
) -> dict:
    """Link, close or hold every open target of every released week. Returns counts by outcome.

    Without ``ask_holdings`` (the frequent tick) targets whose entry the poll has not processed wait; the
    holdings status is asked after each poll and daily.
    """
    now = now or clock.now()
    counts = {"scored": 0, "closed": 0, "held": 0, "waiting": 0}
    holdings = (holdings or holdings_client()) if ask_holdings else None
    for week in released_weeks(now):
        if week.status == BlindWeek.Status.COMMITTED:
            BlindWeek.objects.filter(pk=week.pk).update(status=BlindWeek.Status.RELEASED)
        polled = PollRun.objects.filter(
            status=PollRun.Status.DONE, backfill=False, until__gte=week.release_date
        ).exists()
        targets = week.targets.filter(state__in=[BlindTarget.State.OPEN, BlindTarget.State.HELD])
        for blind in targets.select_related("target"):
            outcome = link_target(blind, now=now, polled=polled, holdings=holdings)
            counts[outcome] += 1
        if not week.targets.filter(state__in=[BlindTarget.State.OPEN, BlindTarget.State.HELD]).exists():
            BlindWeek.objects.filter(pk=week.pk).update(status=BlindWeek.Status.DONE)
    return counts


def link_target(
    blind: BlindTarget, *, now: dt.datetime, polled: bool, holdings: HoldingsClient | None
) -> str:
    """Decide one target: "scored" (linked), "closed", "held" or "waiting"."""
    entry = PdbEntry.objects.filter(pdb_id=blind.pdb_id).first()
    grace_over = now > blind.week.release_at + dt.timedelta(days=settings.BLIND_HOLD_GRACE_DAYS)
    if entry is not None and entry.status == PdbEntry.Status.OK:
        return _link_entry(blind, entry, now=now)
    if entry is not None and entry.status == PdbEntry.Status.GONE:
        return _close(blind, now, "withdrawn or removed after the release (the file is gone, HTTP 404)")
    if entry is not None and entry.status == PdbEntry.Status.UNREADABLE:
        return _close(blind, now, f"released file unreadable: {entry.reason}")
    if not polled or holdings is None:
        return _wait(blind, now)
    try:
        status = holdings.status(blind.pdb_id)
    except HoldingsError as exc:
        log.warning("%s: holdings status unavailable: %s", blind.pdb_id, exc)
        return _wait(blind, now)
    if status.status == UNRELEASED and status.code in WITHDRAWN_CODES:
        return _close(blind, now, f"withdrawn before release ({status.describe})")
    if status.status in (REMOVED, UNKNOWN):
        return _close(blind, now, f"not released: {status.describe}")
    if status.status == UNRELEASED:
        if grace_over:
            return _close(blind, now, f"still not released {settings.BLIND_HOLD_GRACE_DAYS} days after its "
                                      f"announced release ({status.describe})")
        return _hold(blind, now, f"not released on {blind.week.release_date}: {status.describe}")
    if status.status == CURRENT and grace_over:
        return _close(blind, now, "released, but the weekly poll never found it")
    return _wait(blind, now)


def _close(blind: BlindTarget, now: dt.datetime, reason: str) -> str:
    closed = BlindTarget.State.CLOSED
    BlindTarget.objects.filter(pk=blind.pk).update(state=closed, reason=reason, checked_at=now)
    return "closed"


def _hold(blind: BlindTarget, now: dt.datetime, reason: str) -> str:
    held = BlindTarget.State.HELD
    BlindTarget.objects.filter(pk=blind.pk).update(state=held, reason=reason, checked_at=now)
    return "held"


def _wait(blind: BlindTarget, now: dt.datetime) -> str:
    BlindTarget.objects.filter(pk=blind.pk).update(checked_at=now)
    return "waiting"


def _link_entry(blind: BlindTarget, entry: PdbEntry, *, now: dt.datetime) -> str:
    path = Path(entry.path)
    try:
        extracted = extract(path)
    except (StructureFileError, OSError) as exc:
        return _close(blind, now, f"released file unreadable: {exc}")
    annotated = annotate_entry(extracted)
    structure = extracted.structure
    entity_of: dict[str, str] = {}
    for chain in structure[0]:
        polymer = chain.get_polymer()
        entity = structure.get_entity_of(polymer) if len(polymer) else None
        if entity is not None:
            entity_of.setdefault(chain.name, entity.name)
    weekly_targets = set(
        PdbChain.objects.filter(entry=entry, role=PdbChain.Role.TARGET).values_list("chain_id", flat=True)
    )
    sequence = blind.target.sequence
    considered = []
    for chain in annotated.chains:
        chain_map = map_chain(sequence, chain.sequence)
        considered.append(
            {
                "chain": chain.chain,
                "entity": entity_of.get(chain.chain, ""),
                "length": chain.length,
                "identity": round(chain_map.identity, 4),
                "coverage": round(chain_map.coverage, 4),
                "excluded": chain.excluded or "",
                "weekly_target": chain.chain in weekly_targets,
                "_annotated": chain,
                "_map": chain_map,
            }
        )
    same_entity = [c for c in considered if c["entity"] == blind.entity_id]
    pool = same_entity or considered
    how = "entity" if same_entity else "sequence (no chain of the announced entity)"
    linked = [c for c in pool if c["identity"] >= settings.BLIND_MIN_IDENTITY]
    usable = [c for c in linked if not c["excluded"]]
    usable.sort(key=lambda c: (not c["weekly_target"], c["chain"]))
    chosen = usable[0] if usable else None
    for c in considered:
        c["linked"] = c in linked
        c["used"] = c is chosen
    rows = [{k: v for k, v in c.items() if not k.startswith("_")} for c in considered]
    with transaction.atomic():
        blind.chains = rows
        blind.checked_at = now
        if chosen is None:
            if linked:
                first = sorted(linked, key=lambda c: c["chain"])[0]
                blind.state = BlindTarget.State.CLOSED
                blind.reason = f"released chain {entry.pdb_id}_{first['chain']} unusable: {first['excluded']}"
            else:
                best = max(considered, key=lambda c: c["identity"], default=None)
                blind.state = BlindTarget.State.CLOSED
                blind.reason = (
                    f"no released chain matches the announced sequence (best: chain {best['chain']}, "
                    f"identity {best['identity']:.0%})" if best else "the released entry has no RNA chain"
                )
            blind.save()
            return "closed"
        chain, chain_map = chosen["_annotated"], chosen["_map"]
        blind.chain_id = chain.chain
        blind.identity = chain_map.identity
        blind.window = chain_map.ranges()
        blind.reference = {
            "standard": [list(p) for p in chain_pairs_on_target(chain.standard_pairs, chain_map)],
            "extended": [list(p) for p in chain_pairs_on_target(chain.extended_pairs, chain_map)],
            "linked_by": how,
        }
        blind.state = BlindTarget.State.SCORED
        blind.reason = ""
        blind.linked_at = now
        blind.save()
    score_target(blind)
    return "scored"
