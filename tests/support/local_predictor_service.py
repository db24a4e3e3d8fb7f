"""A method owner's web service, for real: an HTTP server on 127.0.0.1 (free port) folding with ViennaRNA.

Behaviour by path (every request's JSON body is recorded in ``server.requests`` with its path):

* ``/fold`` — ``{"id": ..., "structure": <RNAfold MFE dot-bracket>}`` (a real prediction);
* ``/plain`` — the dot-bracket as ``text/plain``;
* ``/pairs`` — ``{"pairs": [[i, j], ...]}``;
* ``/accept`` — HTTP 202; when ``callbacks`` is true, a thread later uploads the MFE structure to the
  request's ``callback`` URL with its token (like an owner's queue would);
* ``/slow`` — waits ``slow_s`` before answering;
* ``/trickle`` — sends headers, then one byte every 0.2 s, forever;
* ``/garbage`` — HTTP 200 with bytes that are no structure;
* ``/wrong-length`` — a structure one nucleotide too short;
* ``/flaky`` — HTTP 503 for the first ``flaky_failures`` requests, then like ``/fold``;
* ``/error`` — HTTP 500 always;  ``/huge`` — 20 MB of dots;  ``/redirect`` — 302 to ``/fold``;
* ``/other-id`` — a correct structure labelled with another job's id;
* ``/switch`` — behaves as ``/fold``, ``/slow`` or ``/garbage`` as ``server.mode`` says (a service that
  worked when it was registered and misbehaves later).

``server.max_in_flight`` is the largest number of requests it ever served at the same time.

:func:`dead_url` gives a loopback URL where nothing listens (a server that is down).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests


def mfe(sequence: str) -> str:
    import RNA  # ViennaRNA's Python module, installed in .venv for the catalogue

    structure, _energy = RNA.fold(sequence)
    return structure


class _Handler(BaseHTTPRequestHandler):
    server: PredictorService

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its time limit): what a slow service sees

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length", "0"))
        data = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?", 1)[0]
        with self.server.lock:
            self.server.requests.append((path, data))
            self.server.hits[path] = self.server.hits.get(path, 0) + 1
            hits = self.server.hits[path]
        with self.server.lock:
            self.server.in_flight += 1
            self.server.max_in_flight = max(self.server.max_in_flight, self.server.in_flight)
        try:
            self._answer(path, data, hits)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1

    def _answer(self, path: str, data: dict, hits: int) -> None:
        seq, job = data.get("sequence", ""), data.get("id")
        if path == "/switch":
            path = "/" + self.server.mode
        if path == "/flaky" and hits <= self.server.flaky_failures:
            return self._send(503, b'{"error": "busy"}')
        if path == "/slow":
            time.sleep(self.server.slow_s)
        if path in ("/fold", "/flaky", "/slow"):
            return self._send(200, json.dumps({"id": job, "structure": mfe(seq)}).encode())
        if path == "/plain":
            return self._send(200, (mfe(seq) + "\n").encode(), "text/plain")
        if path == "/pairs":
            db = mfe(seq)
            stack, pairs = [], []
            for i, c in enumerate(db, start=1):
                if c == "(":
                    stack.append(i)
                elif c == ")":
                    pairs.append([stack.pop(), i])
            return self._send(200, json.dumps({"pairs": pairs}).encode())
        if path == "/accept":
            if self.server.callbacks and data.get("callback"):
                threading.Thread(target=self.server.upload_later, args=(data,), daemon=True).start()
            return self._send(202, b'{"accepted": true}')
        if path == "/garbage":
            return self._send(200, b"<html>Internal error: NullPointerException</html>", "text/html")
        if path == "/wrong-length":
            return self._send(200, json.dumps({"structure": mfe(seq)[:-1]}).encode())
        if path == "/other-id":
            return self._send(200, json.dumps({"id": "someone-else", "structure": mfe(seq)}).encode())
        if path == "/error":
            return self._send(500, b"Traceback (most recent call last): ...")
        if path == "/huge":
            return self._send(200, b"." * (20 * 2**20), "text/plain")
        if path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/fold")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            try:
                while not self.server.stopping:
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            return None
        return self._send(404, b'{"error": "no such path"}')


class PredictorService(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        *,
        slow_s: float = 30.0,
        flaky_failures: int = 2,
        callbacks: bool = False,
        callback_delay_s: float = 0.5,
    ):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[tuple[str, dict]] = []
        self.hits: dict[str, int] = {}
        self.uploads: list[tuple[int, str]] = []
        self.slow_s = slow_s
        self.flaky_failures = flaky_failures
        self.callbacks = callbacks
        self.callback_delay_s = callback_delay_s
        self.stopping = False
        self.mode = "fold"
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def upload_later(self, data: dict) -> None:
        time.sleep(self.callback_delay_s)
        cb = data["callback"]
        r = requests.post(
            cb["url"],
            json={"structure": mfe(data["sequence"]), "format": "dot-bracket"},
            headers={"Authorization": f"Token {cb['token']}"},
            timeout=30,
        )
        with self.lock:
            self.uploads.append((r.status_code, r.text[:500]))

    def __enter__(self) -> PredictorService:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping = True
        self.shutdown()
        self.server_close()


def dead_url() -> str:
    """A loopback URL where nothing listens: the port was free a moment ago and is closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/fold"
