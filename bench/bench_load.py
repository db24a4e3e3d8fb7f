"""Load benchmark (issue 5): the rankings page and the ranking API under 32 concurrent clients.

Starts the production stack on loopback (PostgreSQL, Redis as the shared Django cache, gunicorn), fills it
with the site data of tests/web_data.py (``--strand`` RNA STRAND-like and ``--pdb`` PDB-like targets, five
methods, three dated snapshots per subset), then runs ``--clients`` keep-alive HTTP/1.1 clients for
``--duration`` seconds, half on ``/rankings/rnastrand/all/extended/`` and half on
``/api/rankings/latest/?dataset=rnastrand&subset=all&definition=extended``. Each client sends one request,
waits for the full response, and repeats until the deadline (a bounded loop, loopback only). Reports
requests/s, p50/p95/p99 latency and errors per URL, as text and with ``--json``.

Usage::

    .venv/bin/python bench/bench_load.py [--duration 60] [--clients 32] [--workers 3] [--threads 4] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.stack import VENV_BIN, free_port, production_stack, wait_for  # noqa: E402

PAGE = "/rankings/rnastrand/all/extended/"
API = "/api/rankings/latest/?dataset=rnastrand&subset=all&definition=extended"


async def client(host: str, port: int, path: str, deadline: float, out: list, errors: list) -> None:
    """One keep-alive client: request, read the whole response, record the latency, repeat."""
    reader = writer = None
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json, text/html\r\n"
        f"Connection: keep-alive\r\n\r\n"
    ).encode()
    while time.perf_counter() < deadline:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            start = time.perf_counter()
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
            if "content-length" in headers:
                await reader.readexactly(int(headers["content-length"]))
            else:  # gunicorn always sends a length for Django responses; read to close otherwise
                await reader.read()
                writer.close()
                reader = writer = None
            elapsed = time.perf_counter() - start
            if status != 200:
                errors.append(f"HTTP {status}")
            else:
                out.append(elapsed)
            if headers.get("connection", "").lower() == "close" and writer is not None:
                writer.close()
                reader = writer = None
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            errors.append(type(exc).__name__)
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


async def run_load(host: str, port: int, *, clients: int, duration: float) -> dict:
    deadline = time.perf_counter() + duration
    results = {PAGE: ([], []), API: ([], [])}
    tasks = []
    for k in range(clients):
        path = PAGE if k % 2 == 0 else API
        lat, err = results[path]
        tasks.append(asyncio.create_task(client(host, port, path, deadline, lat, err)))
    started = time.perf_counter()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - started
    report = {}
    for path, (lat, err) in results.items():
        ms = np.array(lat) * 1000
        report[path] = {
            "requests": len(lat),
            "errors": len(err),
            "error_kinds": sorted(set(err)),
            "rps": len(lat) / wall,
            "p50_ms": float(np.percentile(ms, 50)) if ms.size else None,
            "p95_ms": float(np.percentile(ms, 95)) if ms.size else None,
            "p99_ms": float(np.percentile(ms, 99)) if ms.size else None,
        }
    all_ms = np.concatenate([np.array(v[0]) for v in results.values()]) * 1000
    report["total"] = {
        "requests": int(all_ms.size),
        "errors": sum(len(v[1]) for v in results.values()),
        "rps": all_ms.size / wall,
        "p50_ms": float(np.percentile(all_ms, 50)),
        "p95_ms": float(np.percentile(all_ms, 95)),
        "p99_ms": float(np.percentile(all_ms, 99)),
    }
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--strand", type=int, default=200, help="RNA STRAND-like targets")
    ap.add_argument("--pdb", type=int, default=40, help="PDB-like targets")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    static_root = Path(tempfile.mkdtemp(prefix="comparna-bench-static-"))
    try:
        with production_stack(
            extra_env={
                "DJANGO_SETTINGS_MODULE": "tests.web_settings",
                "COMPARNA_STATIC_ROOT": str(static_root),
                "DATABASE_CONN_MAX_AGE": "600",
                "COMPARNA_LOG_LEVEL": "WARNING",
            }
        ) as stack:
            stack.env["COMPARNA_CACHE_URL"] = f"redis://127.0.0.1:{stack.redis_port}/1"
            t0 = time.perf_counter()
            stack.manage(
                "shell",
                "-c",
                "from tests.web_data import build_site_data; "
                f"build_site_data(n_strand={args.strand}, n_pdb={args.pdb})",
                timeout=1200,
            )
            built = time.perf_counter() - t0
            port = free_port()
            stack.start(
                "gunicorn",
                [
                    str(VENV_BIN / "gunicorn"),
                    "comparna.wsgi",
                    "-b",
                    f"127.0.0.1:{port}",
                    "-w",
                    str(args.workers),
                    "-k",
                    "gthread",
                    "--threads",
                    str(args.threads),
                    "--keep-alive",
                    "30",
                    "--timeout",
                    "120",
                    "--backlog",
                    "256",
                ],
            )
            base = f"http://127.0.0.1:{port}"
            wait_for(
                lambda: requests.get(base + "/", timeout=5).status_code == 200, timeout=60, what="gunicorn"
            )
            cold = {}
            for path in (PAGE, API):  # the first request computes and caches (CIs, serialisation)
                start = time.perf_counter()
                assert requests.get(base + path, timeout=120).status_code == 200
                cold[path] = (time.perf_counter() - start) * 1000
            report = asyncio.run(run_load("127.0.0.1", port, clients=args.clients, duration=args.duration))
            report["setup"] = {
                "targets": args.strand + args.pdb,
                "build_s": built,
                "cold_first_request_ms": cold,
                "gunicorn": f"{args.workers} workers x {args.threads} threads (gthread)",
                "clients": args.clients,
                "duration_s": args.duration,
                "cache": "Redis (django.core.cache.backends.redis.RedisCache)",
            }
    finally:
        shutil.rmtree(static_root, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{'url':<72} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}")
        for path in (PAGE, API, "total"):
            r = report[path]
            print(
                f"{path:<72} {r['rps']:8.1f} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['p99_ms']:8.1f}"
                f" {r['errors']:7d}"
            )
        print(json.dumps(report["setup"]))
    return 0 if report["total"]["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
