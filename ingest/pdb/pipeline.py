"""One PDB entry from download to annotated chains, with every failure turned into a recorded outcome.

The weekly poll (a Celery task owned by the Django side) calls :func:`fetch_and_annotate` for each new
identifier and stores the :class:`EntryOutcome`; nothing here raises for a per-entry problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ingest.pdb.annotate import AnnotatedEntry, annotate_entry
from ingest.pdb.extract import StructureFileError, extract
from ingest.pdb.rcsb import DownloadFailed, EntryGone, RcsbClient

OK = "ok"
GONE = "gone"  # 404 between search and download
DOWNLOAD_FAILED = "download_failed"  # retries exhausted (5xx, timeouts, truncated/corrupt gzip ...)
UNREADABLE = "unreadable"  # downloaded intact but not a parseable structure file


@dataclass(frozen=True)
class EntryOutcome:
    """What happened to one entry.

    Attributes
    ----------
    status : str
        :data:`OK`, :data:`GONE`, :data:`DOWNLOAD_FAILED` or :data:`UNREADABLE`.
    reason : str or None
        Human-readable cause for every status except OK.
    path : Path or None
        The verified ``{ID}.cif.gz`` for OK; None otherwise (an unreadable file is deleted, so the
        directory only ever holds usable entries).
    attempts : int
        Download attempts made.
    annotation : AnnotatedEntry or None
        Chains with standard/extended pairs and exclusions, for OK.
    seconds : dict
        Wall time of ``download``, ``extract`` and ``annotate``.
    """

    pdb_id: str
    status: str
    reason: str | None = None
    path: Path | None = None
    attempts: int = 0
    annotation: AnnotatedEntry | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def fetch_and_annotate(client: RcsbClient, pdb_id: str, directory: str | Path) -> EntryOutcome:
    """Download ``pdb_id`` into ``directory``, extract its chains and annotate its base pairs."""
    pdb_id = pdb_id.upper()
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        download = client.download(pdb_id, directory)
    except EntryGone as exc:
        seconds["download"] = time.perf_counter() - t0
        return EntryOutcome(pdb_id, GONE, str(exc), attempts=1, seconds=seconds)
    except DownloadFailed as exc:
        seconds["download"] = time.perf_counter() - t0
        return EntryOutcome(pdb_id, DOWNLOAD_FAILED, exc.reason, attempts=exc.attempts, seconds=seconds)
    seconds["download"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        entry = extract(download.path)
    except StructureFileError as exc:
        download.path.unlink(missing_ok=True)
        seconds["extract"] = time.perf_counter() - t1
        return EntryOutcome(pdb_id, UNREADABLE, str(exc), attempts=download.attempts, seconds=seconds)
    seconds["extract"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    annotation = annotate_entry(entry)
    seconds["annotate"] = time.perf_counter() - t2
    return EntryOutcome(pdb_id, OK, None, download.path, download.attempts, annotation, seconds)
