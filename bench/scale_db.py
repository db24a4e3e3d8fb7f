"""A persistent scale database for iterating on issue 28 (build once, measure many times).

``bench/bench_scale.py`` builds its synthetic database afresh in a temporary cluster each run; at the full
size (100 methods × 20 000 targets) that build takes minutes. This tool keeps one:

    .venv/bin/python bench/scale_db.py up /work/scale --methods 100 --targets 20000   # start, build if empty
    .venv/bin/python bench/scale_db.py url /work/scale                                # print DATABASE_URL
    .venv/bin/python bench/scale_db.py down /work/scale                               # stop the cluster
    .venv/bin/python bench/bench_scale.py --database-url "$(... url /work/scale)"     # measure on it

The cluster listens on 127.0.0.1 on the port written to ``DIR/port``; ``DIR/built.json`` records what was
built (sizes, row counts), so ``up`` on a built directory only starts it and migrates.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.stack import _pg_bin, free_port  # noqa: E402

PYTHON = sys.executable
REPO = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], root: Path) -> None:
    if os.geteuid() == 0:
        import shlex

        cmd = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(shlex.quote(c) for c in cmd)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)


def url(root: Path) -> str:
    return f"postgres://postgres@127.0.0.1:{(root / 'port').read_text().strip()}/comparna"


def running(root: Path) -> bool:
    return (root / "data" / "postmaster.pid").exists()


def up(root: Path, methods: int, targets: int) -> None:
    bindir = _pg_bin()
    root.mkdir(parents=True, exist_ok=True)
    data, sock = root / "data", root / "sock"
    sock.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        for p in (root, sock):
            shutil.chown(p, "postgres")
        os.chmod(root, 0o755)
    fresh = not data.exists()
    if fresh:
        _run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"], root)
        (root / "port").write_text(str(free_port()))
    port = (root / "port").read_text().strip()
    if not running(root):
        opts = (
            f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 "
            "-c shared_buffers=512MB -c work_mem=32MB"
        )
        start = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", opts, "-w", "start"]
        _run(start, root)
    if fresh:
        _run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", port, "-U", "postgres", "comparna"], root)
    env = {
        **os.environ,
        "DATABASE_URL": url(root),
        "DJANGO_SETTINGS_MODULE": "comparna.settings",
        "COMPARNA_DATA_DIR": str(root / "comparna-data"),
        "COMPARNA_LOG_LEVEL": "WARNING",
    }
    subprocess.run([PYTHON, str(REPO / "manage.py"), "migrate", "--noinput"], check=True, env=env, cwd=REPO)
    if (root / "built.json").exists():
        print(url(root))
        return
    code = (
        "import django, json, sys, time; django.setup()\n"
        "from bench.scale_data import build_scale_data\n"
        "t = time.perf_counter()\n"
        f"rows = build_scale_data(methods={methods}, targets={targets}, "
        "progress=lambda d, n: print(f'versions {d}/{n}', file=sys.stderr))\n"
        f"print(json.dumps({{'methods': {methods}, 'targets': {targets}, 'rows': rows, "
        "'build_s': time.perf_counter() - t}))\n"
    )
    out = subprocess.run([PYTHON, "-c", code], check=True, env=env, cwd=REPO, capture_output=True, text=True)
    sys.stderr.write(out.stderr[-2000:])
    (root / "built.json").write_text(out.stdout.strip().splitlines()[-1] + "\n")
    print(url(root))


def down(root: Path) -> None:
    if running(root):
        _run([str(_pg_bin() / "pg_ctl"), "-D", str(root / "data"), "-m", "fast", "-w", "stop"], root)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("up", "url", "down"))
    p.add_argument("dir", type=Path)
    p.add_argument("--methods", type=int, default=100)
    p.add_argument("--targets", type=int, default=20000)
    args = p.parse_args(argv)
    root = args.dir.resolve()
    if args.action == "up":
        t = time.perf_counter()
        up(root, args.methods, args.targets)
        print(f"ready in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    elif args.action == "url":
        print(url(root))
    else:
        down(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
