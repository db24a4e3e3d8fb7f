"""A local stand-in for the wwPDB's pre-release files: a real HTTP server on 127.0.0.1 (ephemeral port).

``GET /files/{name}`` serves the version of ``name`` that is current by the stand-in's clock, with its
``Last-Modified`` date, as https://www.wwpdb.org/files/ does (each Saturday's files replace last week's at
the same address). Versions are published with :meth:`LocalWwpdb.publish` (at once) or scheduled with
``publish(..., at=datetime)`` (current once the clock reaches ``at``; the clock is a callable, e.g. the
time-travel clock of the stack under test).

Fault injection per file name (counts are decremented per request):

* ``fail_500[name] = n`` - HTTP 500 for the next n requests;
* ``cut[name] = n`` - announce the full Content-Length, send half of the body and close;
* a file never published is 404 (the wwPDB before the first Saturday, or a file it stopped publishing).

Content faults (a stale file, a file cut at a line, two files from different weeks) are published as such.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent / "wwpdb"


@dataclass(frozen=True)
class Version:
    at: datetime
    body: bytes
    last_modified: datetime


class LocalWwpdb:
    def __init__(self, *, clock: Callable[[], datetime] | None = None):
        self.clock = clock or (lambda: datetime.now(UTC))
        self.versions: dict[str, list[Version]] = {}
        self.fail_500: dict[str, int] = {}
        self.cut: dict[str, int] = {}
        self.log: list[tuple[str, int]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def publish(
        self,
        name: str,
        text: str | bytes,
        *,
        at: datetime | None = None,
        last_modified: datetime | None = None,
    ) -> None:
        """Make ``text`` the content of ``name`` from ``at`` on (now by default)."""
        at = at or self.clock()
        body = text.encode() if isinstance(text, str) else text
        with self._lock:
            self.versions.setdefault(name, []).append(Version(at, body, last_modified or at))
            self.versions[name].sort(key=lambda v: v.at)

    def current(self, name: str) -> Version | None:
        now = self.clock()
        with self._lock:
            live = [v for v in self.versions.get(name, []) if v.at <= now]
        return live[-1] if live else None

    def hits(self, name: str) -> int:
        with self._lock:
            return sum(1 for path, _ in self.log if path.endswith(name))

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> LocalWwpdb:
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="local-wwpdb", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalWwpdb:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/files"

    def _take(self, table: dict, name: str) -> bool:
        with self._lock:
            left = table.get(name, 0)
            if left <= 0:
                return False
            table[name] = left - 1
            return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass


def _handler(site: LocalWwpdb):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes, *, headers: dict | None = None, length: int | None = None):
            with site._lock:
                site.log.append((self.path, status))
            self.send_response(status)
            self.send_header("Content-Type", "text/tab-separated-values" if status == 200 else "text/plain")
            self.send_header("Content-Length", str(len(body) if length is None else length))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def do_GET(self):
            prefix = "/files/"
            name = self.path[len(prefix) :] if self.path.startswith(prefix) else ""
            version = site.current(name) if name else None
            if version is None:
                self._send(404, b"Not Found")
                return
            if site._take(site.fail_500, name):
                self._send(500, b"injected failure")
                return
            headers = {"Last-Modified": format_datetime(version.last_modified.astimezone(UTC), usegmt=True)}
            if site._take(site.cut, name):
                half = version.body[: len(version.body) // 2]
                self._send(200, half, headers=headers, length=len(version.body))
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            self._send(200, version.body, headers=headers)

    return Handler
