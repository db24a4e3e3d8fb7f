"""RCSB PDB client: weekly search for new RNA-containing entries and safe mmCIF downloads.

Search uses the RCSB Search API v2 (``POST {search_url}`` with a JSON query, https://search.rcsb.org):
entries with at least one RNA polymer entity (``rcsb_entry_info.polymer_entity_count_RNA > 0``) whose
``rcsb_accession_info.initial_release_date`` lies in a closed date window, paginated with
``request_options.paginate`` (``start``/``rows``). The API answers 204 No Content when nothing matches.

Downloads fetch ``{download_url}/{ID}.cif.gz`` and are written atomically: the body goes to a temporary
file in the destination directory, is checked (byte count against ``Content-Length``, then the gzip
stream is decompressed in full, which verifies its CRC-32 and length trailer), and only then moved into
place with :func:`os.replace`. A failed or interrupted download never leaves a file behind.

Retries with exponential backoff (``backoff * 2**k`` seconds, capped) cover what may heal by itself:
HTTP 5xx and 429, connection errors, timeouts, truncated or corrupt bodies. A 404 means the entry is gone
(obsoleted or withdrawn between search and download): :class:`EntryGone`, never retried.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import requests

from comparna.bounded import CappedInflater, TooLarge
from ingest.pdb.extract import MAX_STRUCTURE_BYTES

DEFAULT_SEARCH_URL = "https://search.rcsb.org/rcsbsearch/v2/query"
DEFAULT_DOWNLOAD_URL = "https://files.rcsb.org/download"

_PDB_ID = re.compile(r"^[0-9][A-Za-z0-9]{3}$|^pdb_[0-9a-z]{8}$", re.IGNORECASE)


class RcsbError(Exception):
    """Base class of the client's errors."""


class SearchFailed(RcsbError):
    """The search could not be completed (after retries, or a malformed answer)."""


class EntryGone(RcsbError):
    """The entry's file does not exist (HTTP 404): obsoleted or withdrawn. Not retried."""

    def __init__(self, pdb_id: str):
        super().__init__(f"{pdb_id}: not found on the server (HTTP 404)")
        self.pdb_id = pdb_id


class DownloadFailed(RcsbError):
    """A download failed for good; ``reason`` says why and ``attempts`` how often it was tried."""

    def __init__(self, pdb_id: str, reason: str, attempts: int):
        super().__init__(f"{pdb_id}: download failed after {attempts} attempt(s): {reason}")
        self.pdb_id = pdb_id
        self.reason = reason
        self.attempts = attempts


class _Retryable(Exception):
    """Internal: an attempt failed in a way that may succeed on retry."""


@dataclass(frozen=True)
class SearchResult:
    """Identifiers of the matching entries (upper case, in the server's order) and paging facts."""

    identifiers: tuple[str, ...]
    total_count: int
    requests: int


@dataclass(frozen=True)
class Download:
    """A verified file on disk."""

    pdb_id: str
    path: Path
    size: int
    uncompressed_size: int
    sha256: str
    attempts: int


def rna_release_query(since: date, until: date, *, start: int = 0, rows: int = 100) -> dict:
    """The Search API v2 query for entries with RNA released between ``since`` and ``until`` inclusive."""
    return {
        "query": {
            "type": "group",
            "logical_operator": "and",
            "nodes": [
                {
                    "type": "terminal",
                    "service": "text",
                    "parameters": {
                        "attribute": "rcsb_entry_info.polymer_entity_count_RNA",
                        "operator": "greater",
                        "value": 0,
                    },
                },
                {
                    "type": "terminal",
                    "service": "text",
                    "parameters": {
                        "attribute": "rcsb_accession_info.initial_release_date",
                        "operator": "range",
                        "value": {
                            "from": since.isoformat(),
                            "to": until.isoformat(),
                            "include_lower": True,
                            "include_upper": True,
                        },
                    },
                },
            ],
        },
        "return_type": "entry",
        "request_options": {
            "paginate": {"start": start, "rows": rows},
            "results_content_type": ["experimental"],
            "sort": [{"sort_by": "rcsb_accession_info.initial_release_date", "direction": "asc"}],
        },
    }


class RcsbClient:
    """Client for the RCSB search and file services (or a compatible local server in tests).

    Parameters
    ----------
    search_url : str
        Search API endpoint (``.../rcsbsearch/v2/query``).
    download_url : str
        Base URL of the files; ``{download_url}/{ID}.cif.gz`` is fetched.
    timeout : float
        Seconds for connecting and for each read.
    retries : int
        Extra attempts after the first one for retryable failures.
    backoff, max_backoff : float
        Wait ``min(backoff * 2**k, max_backoff)`` seconds before retry k+1.
    page_size : int
        Rows per search page.
    session : requests.Session, optional
    sleep : callable
        Called with the number of seconds to wait (``time.sleep``; tests may record the calls).
    """

    def __init__(
        self,
        search_url: str = DEFAULT_SEARCH_URL,
        download_url: str = DEFAULT_DOWNLOAD_URL,
        *,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 2.0,
        max_backoff: float = 120.0,
        page_size: int = 100,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.search_url = search_url
        self.download_url = download_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.page_size = page_size
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "CompaRNA-ingest (+https://github.com/)")
        self._sleep = sleep

    def _wait(self, attempt: int) -> None:
        self._sleep(min(self.backoff * 2**attempt, self.max_backoff))

    # -- search --------------------------------------------------------------------------------------

    def _search_page(self, query: dict) -> dict | None:
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._wait(attempt - 1)
            try:
                response = self.session.post(self.search_url, json=query, timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 204:
                return None
            if response.status_code >= 500 or response.status_code == 429:
                last = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise SearchFailed(f"search rejected: HTTP {response.status_code}: {response.text[:300]}")
            try:
                return response.json()
            except ValueError as exc:
                last = f"invalid JSON: {exc}"
                continue
        raise SearchFailed(f"search failed after {self.retries + 1} attempt(s): {last}")

    def search_rna_entries(self, since: date, until: date) -> SearchResult:
        """All entries with RNA released in [``since``, ``until``], following the pagination.

        Raises
        ------
        SearchFailed
            A page could not be fetched after the retries, or the answer is not a search result.
        """
        if until < since:
            raise ValueError(f"empty window: {since} > {until}")
        identifiers: list[str] = []
        seen: set[str] = set()
        start, total, calls = 0, None, 0
        while total is None or start < total:
            page = self._search_page(rna_release_query(since, until, start=start, rows=self.page_size))
            calls += 1
            if page is None:
                break
            try:
                total = int(page["total_count"])
                rows = page.get("result_set", [])
                ids = [str(row["identifier"]).upper() for row in rows]
            except (KeyError, TypeError, ValueError) as exc:
                raise SearchFailed(f"malformed search answer: {exc!r}") from exc
            for pdb_id in ids:
                if pdb_id not in seen:
                    seen.add(pdb_id)
                    identifiers.append(pdb_id)
            if not ids:
                break
            start += len(ids)
        return SearchResult(tuple(identifiers), total or 0, calls)

    # -- download ------------------------------------------------------------------------------------

    def file_url(self, pdb_id: str) -> str:
        return f"{self.download_url}/{pdb_id.upper()}.cif.gz"

    def download(self, pdb_id: str, directory: str | Path) -> Download:
        """Download ``{ID}.cif.gz`` into ``directory`` (as ``{ID}.cif.gz``), verified and atomically.

        Raises
        ------
        EntryGone
            HTTP 404.
        DownloadFailed
            Any other failure after the retries (reason: HTTP status, timeout, connection error, size
            mismatch, corrupt/truncated gzip).
        """
        if not _PDB_ID.match(pdb_id):
            raise ValueError(f"not a PDB identifier: {pdb_id!r}")
        pdb_id = pdb_id.upper()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{pdb_id}.cif.gz"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._wait(attempt - 1)
            try:
                size, usize, digest = self._fetch_to(pdb_id, target)
            except _Retryable as exc:
                last = str(exc)
                continue
            except _Fatal as exc:
                raise DownloadFailed(pdb_id, str(exc), attempt + 1) from None
            return Download(pdb_id, target, size, usize, digest, attempt + 1)
        raise DownloadFailed(pdb_id, last, self.retries + 1)

    def _fetch_to(self, pdb_id: str, target: Path) -> tuple[int, int, str]:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                size, usize, digest = self._stream(pdb_id, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
            return size, usize, digest
        finally:
            if tmp.exists():
                tmp.unlink()

    def _stream(self, pdb_id: str, out) -> tuple[int, int, str]:
        url = self.file_url(pdb_id)
        try:
            response = self.session.get(url, stream=True, timeout=self.timeout)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        with response:
            if response.status_code == 404:
                raise EntryGone(pdb_id)
            if response.status_code >= 500 or response.status_code == 429:
                raise _Retryable(f"HTTP {response.status_code}")
            if response.status_code != 200:
                raise _Fatal(f"HTTP {response.status_code}")
            expected = response.headers.get("Content-Length")
            sha = hashlib.sha256()
            # Checks CRC-32 and length of every gzip member; output is counted, never kept (a bomb stops
            # at the cap instead of filling memory or disk).
            inflater = CappedInflater(MAX_STRUCTURE_BYTES, f"{pdb_id}.cif.gz")
            size = 0
            try:
                # raw bytes as sent: a Content-Encoding must not be undone, the file itself is the gzip
                for chunk in response.raw.stream(64 * 1024, decode_content=False):
                    out.write(chunk)
                    sha.update(chunk)
                    size += len(chunk)
                    inflater.feed(chunk)
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise _Retryable(f"{type(exc).__name__} while reading: {exc}") from None
            except TooLarge as exc:
                raise _Fatal(str(exc)) from None
            except zlib.error as exc:
                raise _Retryable(f"corrupt gzip data: {exc}") from None
            except Exception as exc:  # urllib3 errors (ProtocolError, ReadTimeoutError) arrive unwrapped
                if type(exc).__module__.startswith("urllib3"):
                    raise _Retryable(f"{type(exc).__name__} while reading: {exc}") from None
                raise
            if expected is not None and expected.isascii() and expected.isdigit() and int(expected) != size:
                raise _Retryable(f"size mismatch: got {size} bytes, Content-Length {expected}")
            if size == 0:
                raise _Retryable("empty body")
            if not inflater.eof:
                raise _Retryable(f"truncated gzip: stream ends before its trailer after {size} bytes")
        return size, inflater.size, sha.hexdigest()


class _Fatal(Exception):
    """Internal: an attempt failed in a way retrying cannot fix."""
