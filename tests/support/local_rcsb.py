"""A local stand-in for the RCSB services: a real HTTP server on 127.0.0.1 (ephemeral port).

Endpoints (the ones :class:`ingest.pdb.rcsb.RcsbClient` uses):

* ``POST /rcsbsearch/v2/query`` - Search API v2 subset: the query must be the RNA/release-date query of
  :func:`ingest.pdb.rcsb.rna_release_query` (anything else is HTTP 400, so a client sending a wrong schema
  fails here too); entries with RNA released in the range are returned sorted by date, paginated by
  ``request_options.paginate``; 204 when nothing matches.
* ``GET /download/{ID}.cif.gz`` - the entry's real file (from ``tests/data/mmcif.tar.gz``), gzipped.
* ``GET /rest/v1/holdings/status/{ID}`` - the Data API's holdings status: ``CURRENT``/``REL`` for a released
  entry, ``UNRELEASED``/``HPUB`` for one not yet released, 404 for an unknown id; ``holdings[ID] =
  (status, code)`` overrides it (e.g. ``("UNRELEASED", "WDRN")`` for a withdrawn entry).

With ``clock`` (a callable returning the current UTC datetime, e.g. :func:`comparna.clock.now` of a
time-travel clock) an entry exists only from its release date on: search does not list it and its file is
404 before, as at the RCSB.

Fault injection per entry (counts are decremented per request, ``ALWAYS`` never runs out):

* ``fail_500[ID] = n`` - HTTP 500 for the next n requests;
* ``delay[ID] = (n, seconds)`` - wait ``seconds`` before answering, for the next n requests;
* ``truncate[ID] = n`` - serve a gzip cut in half (consistent Content-Length);
* ``cut[ID] = n`` - announce the full Content-Length, send half, close the connection;
* ``malformed`` - set of IDs served as a valid gzip of a broken mmCIF;
* ``gone`` - set of IDs listed by search but 404 on download.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ALWAYS = 10**9

#: Fixture files and the PDB identifiers they stand for.
FIXTURE_FILES = {
    "1EHZ": "1ehz-assembly-1.cif",
    "1A1T": "1A1T_1_B.cif",
    "1A4D": "1A4D_1_A-B.cif",
    "184D": "184D.cif",
    "1DFU": "1DFU_1_M-N.cif",
    "1E7K": "1E7K_1_C.cif",
    "1HMH": "1HMH_1_E.cif",
    "1JJP": "1JJP.cif",
    "1GID": "1gid.cif.gz",
    "2HY9": "2HY9.cif",
    "4QLN": "4qln.cif",
    "6FC9": "6FC9.cif",
    "6INQ": "6INQ.cif",
    "6RS3": "6RS3.cif",
    "6G90": "6g90_1.cif",
    "8BTK": "8btk_B7.cif",
}

MALFORMED_MMCIF = b"data_BROKEN\nloop_\n_atom_site.group_PDB\n_atom_site.id\n_atom_site.Cartn_x\nATOM 1\n"


@dataclass
class LocalEntry:
    pdb_id: str
    release: date
    source: Path | None
    has_rna: bool = True


def fixture_entries(mmcif_dir: Path, *, first_release: date = date(2024, 1, 3)) -> list[LocalEntry]:
    """The fixture files as entries released one per Wednesday-week, four weeks round-robin.

    ``has_rna`` comes from gemmi's polymer classification of the file, like the PDB's own entity count.
    """
    import gemmi

    entries = []
    for k, (pdb_id, name) in enumerate(FIXTURE_FILES.items()):
        path = mmcif_dir / name
        structure = gemmi.read_structure(str(path))
        structure.setup_entities()
        has_rna = any(
            entity.polymer_type in (gemmi.PolymerType.Rna, gemmi.PolymerType.DnaRnaHybrid)
            for entity in structure.entities
        ) or any(
            chain.get_polymer().check_polymer_type() == gemmi.PolymerType.Rna for chain in structure[0]
        )
        entries.append(LocalEntry(pdb_id, first_release + timedelta(weeks=k % 4), path, has_rna))
    return entries


class LocalRcsb:
    """The server; use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, entries: list[LocalEntry], *, clock: Callable[[], datetime] | None = None):
        self.entries = {e.pdb_id.upper(): e for e in entries}
        self.clock = clock
        self.holdings: dict[str, tuple[str, str]] = {}
        self.fail_500: dict[str, int] = {}
        self.delay: dict[str, tuple[int, float]] = {}
        self.truncate: dict[str, int] = {}
        self.cut: dict[str, int] = {}
        self.malformed: set[str] = set()
        self.gone: set[str] = set()
        self.bodies: dict[str, bytes] = {}  # served instead of the entry's gzip (e.g. a gzip bomb)
        self.search_fail_500 = 0
        self.log: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._gz_cache: dict[str, bytes] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> LocalRcsb:
        handler = _make_handler(self)
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="local-rcsb", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalRcsb:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def search_url(self) -> str:
        return f"{self.base_url}/rcsbsearch/v2/query"

    @property
    def download_url(self) -> str:
        return f"{self.base_url}/download"

    @property
    def data_url(self) -> str:
        return f"{self.base_url}/rest/v1"

    def released(self, pdb_id: str) -> bool:
        entry = self.entries.get(pdb_id)
        if entry is None:
            return False
        return self.clock is None or entry.release <= self.clock().date()

    def holding(self, pdb_id: str) -> tuple[str, str] | None:
        if pdb_id in self.holdings:
            return self.holdings[pdb_id]
        if pdb_id not in self.entries:
            return None
        return ("CURRENT", "REL") if self.released(pdb_id) else ("UNRELEASED", "HPUB")

    def hits(self, path_fragment: str) -> int:
        with self._lock:
            return sum(1 for _, path, _ in self.log if path_fragment in path)

    # -- behaviour -----------------------------------------------------------------------------------

    def _take(self, table: dict, pdb_id: str) -> bool:
        with self._lock:
            left = table.get(pdb_id, 0)
            if left <= 0:
                return False
            table[pdb_id] = left - 1
            return True

    def _take_delay(self, pdb_id: str) -> float:
        with self._lock:
            left, seconds = self.delay.get(pdb_id, (0, 0.0))
            if left <= 0:
                return 0.0
            self.delay[pdb_id] = (left - 1, seconds)
            return seconds

    def gzipped(self, pdb_id: str) -> bytes:
        """The bytes served for ``pdb_id`` (gzip of the source file; mtime 0 so it is reproducible)."""
        with self._lock:
            if pdb_id in self.bodies:
                return self.bodies[pdb_id]
            if pdb_id not in self._gz_cache:
                entry = self.entries[pdb_id]
                if pdb_id in self.malformed:
                    raw = MALFORMED_MMCIF
                else:
                    raw = entry.source.read_bytes()
                    if raw[:2] == b"\x1f\x8b":
                        raw = gzip.decompress(raw)
                self._gz_cache[pdb_id] = gzip.compress(raw, mtime=0)
            return self._gz_cache[pdb_id]

    def search(self, query: dict) -> tuple[int, dict | None]:
        try:
            nodes = query["query"]["nodes"]
            by_attribute = {n["parameters"]["attribute"]: n["parameters"] for n in nodes}
            rna = by_attribute["rcsb_entry_info.polymer_entity_count_RNA"]
            released = by_attribute["rcsb_accession_info.initial_release_date"]
            if query["query"]["logical_operator"] != "and" or query["return_type"] != "entry":
                raise ValueError("unsupported query")
            if rna["operator"] != "greater" or rna["value"] != 0 or released["operator"] != "range":
                raise ValueError("unsupported operator")
            window = released["value"]
            low, high = date.fromisoformat(window["from"]), date.fromisoformat(window["to"])
            include_lower = window.get("include_lower", True)
            include_upper = window.get("include_upper", False)
            paginate = query["request_options"]["paginate"]
            start, rows = int(paginate["start"]), int(paginate["rows"])
        except (KeyError, TypeError, ValueError) as exc:
            return 400, {"status": 400, "message": f"invalid query: {exc!r}"}

        def inside(day: date) -> bool:
            above = day >= low if include_lower else day > low
            below = day <= high if include_upper else day < high
            return above and below

        matches = sorted(
            (e for e in self.entries.values() if e.has_rna and inside(e.release) and self.released(e.pdb_id)),
            key=lambda e: (e.release, e.pdb_id),
        )
        if not matches:
            return 204, None
        page = matches[start : start + rows]
        return 200, {
            "query_id": "local",
            "result_type": "entry",
            "total_count": len(matches),
            "result_set": [{"identifier": e.pdb_id, "score": 1.0} for e in page],
        }


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # clients that gave up (timeout tests) make the late write fail: expected, not worth a traceback
        pass


def _make_handler(rcsb: LocalRcsb):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes = b"", content_type: str = "application/json",
                  length: int | None = None) -> None:
            with rcsb._lock:
                rcsb.log.append((self.command, self.path, status))
            self.send_response(status)
            if status != 204:
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body) if length is None else length))
            self.send_header("Connection", "close")
            self.end_headers()
            if body:
                self.wfile.write(body)
            self.close_connection = True

        def do_POST(self):
            if self.path != "/rcsbsearch/v2/query":
                self._send(404, b'{"message": "no such endpoint"}')
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with rcsb._lock:
                fail = rcsb.search_fail_500 > 0
                if fail:
                    rcsb.search_fail_500 -= 1
            if fail:
                self._send(500, b'{"message": "injected failure"}')
                return
            try:
                query = json.loads(raw)
            except ValueError:
                self._send(400, b'{"message": "not JSON"}')
                return
            status, payload = rcsb.search(query)
            self._send(status, b"" if payload is None else json.dumps(payload).encode())

        def do_GET(self):
            if self.path.startswith("/rest/v1/holdings/status/"):
                pdb_id = self.path.rsplit("/", 1)[-1].upper()
                held = rcsb.holding(pdb_id)
                if held is None:
                    self._send(404, b'{"status": 404, "message": "not found"}')
                    return
                record = {
                    "rcsb_id": pdb_id,
                    "rcsb_repository_holdings_combined": {"status": held[0], "status_code": held[1]},
                    "rcsb_repository_holdings_combined_entry_container_identifiers": {
                        "rcsb_id": pdb_id, "entry_id": pdb_id, "update_id": "local"
                    },
                }
                self._send(200, json.dumps(record).encode())
                return
            prefix, suffix = "/download/", ".cif.gz"
            if not (self.path.startswith(prefix) and self.path.endswith(suffix)):
                self._send(404, b"not found", "text/plain")
                return
            pdb_id = self.path[len(prefix) : -len(suffix)].upper()
            seconds = rcsb._take_delay(pdb_id)
            if seconds and rcsb._stop.wait(seconds):
                return
            if pdb_id not in rcsb.entries or pdb_id in rcsb.gone or not rcsb.released(pdb_id):
                self._send(404, b"not found", "text/plain")
                return
            if rcsb._take(rcsb.fail_500, pdb_id):
                self._send(500, b"injected failure", "text/plain")
                return
            body = rcsb.gzipped(pdb_id)
            if rcsb._take(rcsb.truncate, pdb_id):
                self._send(200, body[: len(body) // 2], "application/octet-stream")
                return
            if rcsb._take(rcsb.cut, pdb_id):
                self._send(200, body[: len(body) // 2], "application/octet-stream", length=len(body))
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            self._send(200, body, "application/octet-stream")

    return Handler
