"""The PDB set from the first start: poll the RCSB at once instead of waiting for beat's Thursday poll.

On start (``manage.py start_pdb_set`` in scripts/run.sh and docker-compose's web command) and then on
beat's schedule until it has begun, :func:`start_pdb_set` asks the RCSB Search API one small question. When
it answers, the weekly poll task is sent now: it fetches every RNA entry released since
``COMPARNA_PDB_BENCHMARK_START`` (its progress is the PollRun's, shown on the home page). When it does not,
the home page and the log say "PDB unreachable: the weekly set starts when it is", and the next scheduled
attempt tries again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from comparna.ops.models import GaugeSnapshot
from ingest.models import PollRun
from ingest.pdb.rcsb import RcsbClient, RcsbError

log = logging.getLogger(__name__)

STATE_NAME = "pdb-first-start"
UNREACHABLE = "PDB unreachable: the weekly set starts when it is"
POLL_TASK = "ingest.tasks.poll_pdb_task"
# A queued first poll is not queued again within this time (it may wait behind other tasks of "default").
QUEUED_GRACE = timedelta(hours=6)


def pdb_set_begun() -> bool:
    """A poll of the benchmark window (not the pre-start backfill) has finished or is running."""
    return PollRun.objects.filter(
        backfill=False, status__in=[PollRun.Status.DONE, PollRun.Status.RUNNING]
    ).exists()


def rcsb_problem(*, client: RcsbClient | None = None) -> str | None:
    """None when the RCSB Search API answers one small query (a day's releases), else what went wrong."""
    client = client or RcsbClient(
        settings.RCSB_SEARCH_URL,
        settings.RCSB_DOWNLOAD_URL,
        timeout=min(settings.RCSB_TIMEOUT_S, 20.0),
        retries=0,
    )
    day = settings.PDB_BENCHMARK_START
    try:
        client.search_rna_entries(day, day)
    except (RcsbError, OSError, ValueError) as exc:
        return str(exc)[:500]
    return None


def _state() -> dict:
    row = GaugeSnapshot.objects.filter(name=STATE_NAME).first()
    return row.values if row else {}


def _record(**values) -> None:
    now = timezone.now()
    GaugeSnapshot.objects.update_or_create(
        name=STATE_NAME, defaults={"computed_at": now, "values": {**values, "at": now.isoformat()}}
    )


def start_pdb_set(*, client: RcsbClient | None = None) -> str:
    """Send the first poll when the RCSB answers; returns "begun", "queued", "sent" or "unreachable"."""
    if pdb_set_begun():
        return "begun"
    state = _state()
    if state.get("state") == "sent" and timezone.now() - _parse(state["at"]) < QUEUED_GRACE:
        return "queued"
    problem = rcsb_problem(client=client)
    if problem is not None:
        log.warning("%s (%s)", UNREACHABLE, problem, extra={"rcsb_search_url": settings.RCSB_SEARCH_URL})
        _record(state="unreachable", error=problem)
        return "unreachable"
    from celery import current_app

    current_app.send_task(POLL_TASK, queue="default")
    _record(state="sent", since=settings.PDB_BENCHMARK_START.isoformat())
    log.info("PDB reachable: polling every RNA entry released since %s", settings.PDB_BENCHMARK_START)
    return "sent"


def _parse(text: str):
    from datetime import datetime

    return datetime.fromisoformat(text)


def pdb_start_status() -> dict | None:
    """What the home page says about the PDB set while it has not begun or its first poll runs (None when
    there is nothing to say). Two small queries."""
    running = (
        PollRun.objects.filter(backfill=False, status=PollRun.Status.RUNNING).order_by("-started_at").first()
    )
    if running is not None:
        return {"state": "running", "run": running, "since": running.since}
    if pdb_set_begun():
        return None
    state = _state()
    if state.get("state") == "unreachable":
        return {"state": "unreachable", "message": UNREACHABLE, "at": _parse(state["at"])}
    if state.get("state") == "sent":
        return {"state": "queued", "since": settings.PDB_BENCHMARK_START, "at": _parse(state["at"])}
    return None
