"""WSGI app that serves captured response bodies from memory: the "static files" limit of bench_load.

``COMPARNA_BENCH_STATIC_DIR`` holds ``index.json`` (``{"/path?query": {"file": ..., "content_type": ...}}``)
and the body files; everything is read once at import, so a request costs only the server's own work
(parse, route, write the same bytes), which is the floor under any dynamic page served by that server.
Run with ``gunicorn bench.static_server:app`` from the repository root.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

_ROOT = Path(os.environ["COMPARNA_BENCH_STATIC_DIR"])
_BODIES: dict[str, tuple[bytes, str]] = {
    key: ((_ROOT / item["file"]).read_bytes(), item["content_type"])
    for key, item in json.loads((_ROOT / "index.json").read_text()).items()
}


def app(environ, start_response):
    query = environ.get("QUERY_STRING", "")
    found = _BODIES.get(environ.get("PATH_INFO", "") + (f"?{query}" if query else ""))
    if found is None:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "10")])
        return [b"not found\n"]
    body, content_type = found
    start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]
