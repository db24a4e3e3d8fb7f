"""The RCSB's holdings status of a PDB entry: released, unreleased (held, withdrawn) or removed.

``GET {data_url}/holdings/status/{ID}`` of the RCSB Data API (https://data.rcsb.org/rest/v1) answers with::

    {"rcsb_id": "1ABC",
     "rcsb_repository_holdings_combined": {"status": "CURRENT" | "UNRELEASED" | "REMOVED",
                                           "status_code": "REL" | "HPUB" | "HOLD" | "WDRN" | "OBS" | ...,
                                           "id_code_replaced_by_latest": "2ABC"},
     "rcsb_repository_holdings_combined_entry_container_identifiers": {...}}

(the RCSB's own loader, rcsb/py-rcsb_db, and BioJava's ``PDBStatus`` read it so), and 404 for an id it does
not know. The blind track asks it about an entry announced on Saturday that the Wednesday poll did not find:
withdrawn (``WDRN``) and removed entries close their targets, held ones wait.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

DEFAULT_DATA_URL = "https://data.rcsb.org/rest/v1"
MAX_ANSWER_BYTES = 1 * 2**20

CURRENT = "CURRENT"
UNRELEASED = "UNRELEASED"
REMOVED = "REMOVED"
UNKNOWN = "UNKNOWN"  # 404: the id is not known to the RCSB

_CODE = re.compile(r"^[A-Z]{2,8}$")
_PDB_ID = re.compile(r"^(?:[0-9][A-Z0-9]{3}|PDB_[0-9A-Z]{8})$")

#: What the status codes mean (wwPDB processing status codes).
CODE_NAMES = {
    "REL": "released",
    "HPUB": "on hold until publication",
    "HOLD": "on hold until a date",
    "WDRN": "withdrawn",
    "OBS": "obsolete (removed)",
    "AUTH": "waiting for the authors' approval",
    "PROC": "being processed",
    "WAIT": "waiting for the authors",
    "REPL": "author sent a replacement",
    "AUCO": "author corrections pending",
    "POLC": "waiting for a policy decision",
    "REFI": "re-refined entry",
    "TRSF": "transferred to another repository",
}


class HoldingsError(RuntimeError):
    """The status could not be obtained (after retries) or the answer is not a holdings record."""


@dataclass(frozen=True)
class HoldingStatus:
    pdb_id: str
    status: str
    code: str = ""
    replaced_by: str = ""

    @property
    def describe(self) -> str:
        if self.status == UNKNOWN:
            return "not known to the PDB"
        name = CODE_NAMES.get(self.code, self.code or self.status.lower())
        return f"{self.status.lower()} ({self.code}: {name})" if self.code else self.status.lower()


class HoldingsClient:
    """Client of the holdings status endpoint (or a compatible local server in tests)."""

    def __init__(
        self,
        data_url: str = DEFAULT_DATA_URL,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 2.0,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.data_url = data_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "CompaRNA-blind (+https://github.com/)")
        self._sleep = sleep

    def status(self, pdb_id: str) -> HoldingStatus:
        """The entry's status; ``UNKNOWN`` for a 404.

        Raises
        ------
        HoldingsError
            The server failed after the retries, or answered something else than a holdings record.
        """
        pdb_id = pdb_id.upper()
        if not _PDB_ID.match(pdb_id):
            raise ValueError(f"not a PDB identifier: {pdb_id!r}")
        url = f"{self.data_url}/holdings/status/{pdb_id}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self.session.get(url, timeout=self.timeout)
            except requests.RequestException as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 404:
                return HoldingStatus(pdb_id, UNKNOWN)
            if response.status_code >= 500 or response.status_code == 429:
                last = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise HoldingsError(f"{url}: HTTP {response.status_code}")
            if len(response.content) > MAX_ANSWER_BYTES:
                raise HoldingsError(f"{url}: answer over {MAX_ANSWER_BYTES} bytes")
            try:
                record = response.json()["rcsb_repository_holdings_combined"]
                status = str(record["status"]).upper()
                code = str(record.get("status_code") or "").upper()
                replaced = str(record.get("id_code_replaced_by_latest") or "").upper()
            except (ValueError, KeyError, TypeError) as exc:
                raise HoldingsError(f"{url}: not a holdings record ({exc!r})") from None
            if status not in (CURRENT, UNRELEASED, REMOVED) or (code and not _CODE.match(code)):
                raise HoldingsError(f"{url}: unexpected status {status!r} / {code!r}")
            return HoldingStatus(pdb_id, status, code, replaced if _PDB_ID.match(replaced) else "")
        raise HoldingsError(f"{url}: failed after {self.retries + 1} attempt(s): {last}")
