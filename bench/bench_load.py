"""Load: the rankings page and the ranking API under concurrent keep-alive clients, against static bytes.

Starts PostgreSQL and Redis on loopback, migrates, and fills the database with the deterministic site data
of ``tests/web_data.py`` (``--strand`` RNA STRAND-like and ``--pdb`` PDB-like targets, five methods with
scored predictions, three dated ranking snapshots per subset). Then three real gunicorn servers (gthread,
``--workers`` x ``--threads``, on a free loopback port) take the same load one after the other: ``--clients``
keep-alive HTTP/1.1 clients for ``--duration`` seconds, half on the rankings page, half on the ranking API
(each client sends a request, reads the whole response, repeats):

- system:   ``comparna.wsgi`` with the Redis page cache, as deployed (warmed by one request per URL);
- baseline: ``comparna.wsgi`` with the cache switched off (``bench.uncached_settings``): every request
  computes its page from the database;
- limit:    ``bench.static_server``: the very bytes the system served, from memory, no Django.

Reported per URL: seconds per request at saturation (wall / requests answered) and p95 latency. The load
generator runs on the same cores as the server, for all three alike.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench  # noqa: E402
from tests.e2e.stack import VENV_BIN, free_port, production_stack, start_service, wait_for  # noqa: E402

URLS = {
    "rankings page": "/rankings/rnastrand/all/extended/",
    "ranking API": "/api/rankings/latest/?dataset=rnastrand&subset=all&definition=extended",
}


async def _client(port: int, path: str, deadline: float, latencies: list, errors: list) -> None:
    """One keep-alive client: request, read the whole response, record the latency, repeat."""
    reader = writer = None
    request = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json, text/html\r\n"
               f"Connection: keep-alive\r\n\r\n").encode()
    while time.perf_counter() < deadline:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            start = time.perf_counter()
            writer.write(request)
            await writer.drain()
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            status = int(head[0].split()[1])
            headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in head[1:] if x)}
            if "content-length" in headers:
                await reader.readexactly(int(headers["content-length"]))
            else:  # no length: the body runs to the end of the connection
                await reader.read()
                headers["connection"] = "close"
            elapsed = time.perf_counter() - start
            (latencies if status == 200 else errors).append(elapsed if status == 200 else f"HTTP {status}")
            if headers.get("connection", "").lower() == "close":
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


async def _load(port: int, *, clients: int, duration: float) -> dict:
    deadline = time.perf_counter() + duration
    results = {name: ([], []) for name in URLS}
    names = list(URLS)
    tasks = [asyncio.create_task(_client(port, URLS[names[k % 2]], deadline, *results[names[k % 2]]))
             for k in range(clients)]
    started = time.perf_counter()
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - started
    out = {}
    for name, (lat, err) in results.items():
        ms = np.array(lat) * 1000
        out[name] = {
            "requests": len(lat),
            "errors": len(err),
            "error_kinds": sorted(set(err)),
            "rps": len(lat) / wall,
            "s_per_request": wall / len(lat) if lat else None,
            **{f"p{q}_ms": float(np.percentile(ms, q)) if ms.size else None for q in (50, 95, 99)},
        }
    return out


def _gunicorn(stack, name: str, app: str, env: dict, args) -> tuple[object, int]:
    port = free_port()
    argv = [str(VENV_BIN / "gunicorn"), app, "-b", f"127.0.0.1:{port}", "-w", str(args.workers),
            "-k", "gthread", "--threads", str(args.threads), "--keep-alive", "30", "--timeout", "120",
            "--backlog", "256"]
    svc = start_service(name, argv, env=env, logdir=stack.workdir)
    stack.services[name] = svc
    path = next(iter(URLS.values()))
    wait_for(lambda: svc.proc.poll() is None and requests.get(f"http://127.0.0.1:{port}{path}", timeout=120)
             .status_code == 200, timeout=120, what=f"gunicorn {name}")
    return svc, port


def main(argv: list[str] | None = None) -> int:
    bench = Bench("load", __doc__, smoke={"strand": 8, "pdb": 4, "duration": 1.0, "clients": 4,
                                         "workers": 1, "threads": 2})
    p = bench.parser
    p.add_argument("--duration", type=float, default=30.0, help="seconds of load per server (30)")
    p.add_argument("--clients", type=int, default=32, help="concurrent keep-alive clients (32)")
    p.add_argument("--workers", type=int, default=3, help="gunicorn worker processes (3)")
    p.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (4)")
    p.add_argument("--strand", type=int, default=200, help="RNA STRAND-like targets (200)")
    p.add_argument("--pdb", type=int, default=40, help="PDB-like targets (40)")
    args = bench.parse(argv)
    if min(args.clients, args.workers, args.threads, args.strand) < 1 or args.pdb < 0 or args.duration <= 0:
        p.error("--clients, --workers, --threads and --strand must be >= 1, --pdb >= 0, --duration > 0")

    with bench.measuring(), tempfile.TemporaryDirectory(prefix="comparna-bench-load-") as tmp:
        static_dir = Path(tmp) / "static"
        static_dir.mkdir()
        env_extra = {"COMPARNA_STATIC_ROOT": str(Path(tmp) / "collected"), "DATABASE_CONN_MAX_AGE": "600",
                     "COMPARNA_LOG_LEVEL": "WARNING"}
        with production_stack(extra_env=env_extra) as stack:
            t0 = time.perf_counter()
            stack.manage("shell", "-c", "from tests.web_data import build_site_data; "
                         f"build_site_data(n_strand={args.strand}, n_pdb={args.pdb})", timeout=3600)
            build_s = time.perf_counter() - t0
            env, cache = stack.env, f"redis://127.0.0.1:{stack.redis_port}/1"
            servers = {
                "system": ("comparna.wsgi", {**env, "COMPARNA_CACHE_URL": cache}),
                "baseline": ("comparna.wsgi", {**env, "DJANGO_SETTINGS_MODULE": "bench.uncached_settings"}),
                "limit": ("bench.static_server:app", {**env, "COMPARNA_BENCH_STATIC_DIR": str(static_dir)}),
            }
            runs, bodies, cold = {}, {}, {}
            for role, (app, env) in servers.items():
                svc, port = _gunicorn(stack, role, app, env, args)
                got = {}
                for name, path in URLS.items():  # one request each: warms the cache, records the bytes
                    start = time.perf_counter()
                    r = requests.get(f"http://127.0.0.1:{port}{path}", timeout=120,
                                     headers={"Accept": "application/json, text/html"})
                    cold.setdefault(role, {})[name] = (time.perf_counter() - start) * 1000
                    got[name] = (r.status_code, r.content, r.headers.get("Content-Type", ""))
                bodies[role] = got
                if role == "system":  # the limit serves exactly these bytes
                    index = {}
                    for k, (name, path) in enumerate(URLS.items()):
                        (static_dir / f"{k}.body").write_bytes(got[name][1])
                        index[path] = {"file": f"{k}.body", "content_type": got[name][2]}
                    (static_dir / "index.json").write_text(json.dumps(index))
                runs[role] = asyncio.run(_load(port, clients=args.clients, duration=args.duration))
                svc.stop()

        for name in URLS:
            bench.check(f"{name}: every request answered 200", all(
                runs[r][name]["errors"] == 0 and runs[r][name]["requests"] > 0 for r in runs))
            system_status, system_body, _ = bodies["system"][name]
            bench.check(f"{name}: limit served the system's bytes",
                        system_status == 200 and bodies["limit"][name][1] == system_body)
            bench.check(f"{name}: baseline page has the system's length (+-2 %)",
                        abs(len(bodies["baseline"][name][1]) - len(bodies["system"][name][1]))
                        <= 0.02 * len(bodies["system"][name][1]))
            what = {"system": "comparna.wsgi + Redis page cache (warm)",
                    "baseline": "comparna.wsgi, cache off (page computed per request)",
                    "limit": "same bytes from memory, bench.static_server on the same gunicorn"}
            for label, unit, key in (("throughput cost", "s per request, saturated", "s_per_request"),
                                     ("p95 latency", "s", "p95_ms")):
                scale = 1e-3 if key.endswith("_ms") else 1.0
                val = {r: (runs[r][name][key] or float("nan")) * scale for r in runs}
                bench.compare(f"{name}, {label}", unit=unit,
                              system=(val["system"], what["system"]),
                              baseline=(val["baseline"], what["baseline"]),
                              limit=(val["limit"], what["limit"]))
        bench.details.update({
            "runs": runs,
            "cold_first_request_ms": cold,
            "bytes": {name: len(bodies["system"][name][1]) for name in URLS},
            "setup": {"targets": args.strand + args.pdb, "build_s": build_s,
                      "gunicorn": f"{args.workers} workers x {args.threads} threads (gthread)",
                      "clients": args.clients, "duration_s": args.duration},
        })
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
