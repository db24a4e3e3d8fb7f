"""Start and stop the real production stack on loopback for integration tests.

PostgreSQL refuses to run as root, so as root the cluster is created and started as the ``postgres`` user
(``su postgres -c ...``) in a temporary directory that user owns. Everything listens on 127.0.0.1 only, on
free ports, and is stopped (process groups killed) when the context exits.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
VENV_BIN = Path(PYTHON).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, *, timeout: float, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - retried until the deadline, reported then
            last_exc = exc
        time.sleep(interval)
    raise TimeoutError(
        f"timed out after {timeout:.0f} s waiting for {what}" + (f": {last_exc}" if last_exc else "")
    )


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
    return Path(found[-1]).parent


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """Yield a DATABASE_URL of a fresh PostgreSQL cluster on 127.0.0.1."""
    bindir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="comparna-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    port = free_port()
    as_root = os.geteuid() == 0
    if as_root:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        os.chmod(root, 0o755)

    def run(cmd: list[str]) -> None:
        if as_root:
            cmd = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(c) for c in cmd)]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    try:
        run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"])
        run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", opts, "-w", "start"])
        run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "comparna"])
        yield f"postgres://postgres@127.0.0.1:{port}/comparna"
    finally:
        with contextlib.suppress(Exception):
            run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


@dataclass
class Service:
    """A background process in its own process group, with its log file."""

    name: str
    proc: subprocess.Popen
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def start_service(name: str, argv: list[str], *, env: dict, logdir: Path) -> Service:
    log = logdir / f"{name}.log"
    fh = open(log, "wb")  # noqa: SIM115 - owned by the Service until the process ends
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
    )
    return Service(name, proc, log)


@dataclass
class Stack:
    """The running stack: environment for subprocesses, and its services."""

    env: dict
    workdir: Path
    services: dict[str, Service] = field(default_factory=dict)
    web_url: str | None = None
    redis_port: int | None = None

    def manage(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
            )
        return proc

    def start(self, name: str, argv: list[str]) -> Service:
        svc = start_service(name, argv, env=self.env, logdir=self.workdir)
        self.services[name] = svc
        return svc

    def start_worker(self, queue: str, *, name: str | None = None, concurrency: int = 1) -> Service:
        name = name or f"worker-{queue}"
        return self.start(
            name,
            [
                str(VENV_BIN / "celery"),
                "-A",
                "comparna.celery:app",
                "worker",
                "-Q",
                queue,
                "-n",
                f"{name}@%h",
                "-c",
                str(concurrency),
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
            ],
        )

    def start_beat(self) -> Service:
        return self.start(
            "beat",
            [
                str(VENV_BIN / "celery"),
                "-A",
                "comparna.celery:app",
                "beat",
                "-l",
                "info",
                "-s",
                str(self.workdir / "celerybeat-schedule"),
            ],
        )

    def start_web(self, port: int | None = None) -> str:
        """gunicorn on 127.0.0.1 (``port``: chosen beforehand when settings such as COMPARNA_SITE_URL
        must name it)."""
        port = port or free_port()
        self.start(
            "gunicorn",
            [
                str(VENV_BIN / "gunicorn"),
                "comparna.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                "2",
                "--timeout",
                "120",
            ],
        )
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: requests.get(url + "/", timeout=5).status_code == 200, timeout=60, what="gunicorn")
        self.web_url = url
        return url

    def logs(self) -> str:
        return "\n".join(f"--- {n} ---\n{s.tail()}" for n, s in self.services.items())


@contextlib.contextmanager
def redis_server() -> Iterator[tuple[int, subprocess.Popen]]:
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        import redis

        wait_for(lambda: redis.Redis(port=port).ping(), timeout=20, what="redis")
        yield port, proc
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


@contextlib.contextmanager
def production_stack(extra_env: dict | None = None) -> Iterator[Stack]:
    """PostgreSQL + Redis, migrated; start workers, beat and gunicorn through the returned Stack."""
    workdir = Path(tempfile.mkdtemp(prefix="comparna-e2e-"))
    with postgres() as database_url, redis_server() as (redis_port, _):
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
            "COMPARNA_DATA_DIR": str(workdir / "data"),
            "DJANGO_SETTINGS_MODULE": "comparna.settings",
            "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
            **(extra_env or {}),
        }
        stack = Stack(env=env, workdir=workdir, redis_port=redis_port)
        try:
            stack.manage("migrate", "--noinput")
            yield stack
        finally:
            for svc in reversed(list(stack.services.values())):
                svc.stop()
            shutil.rmtree(workdir, ignore_errors=True)


def restart_redis(stack: Stack) -> Service:
    """Crash the stack's Redis (SIGKILL: with ``--save ''`` every queued message is lost) and start a new,
    empty one on the same port; the new server is stopped with the stack's other services."""
    import redis

    port = stack.redis_port
    old = stack.services.pop("redis", None)
    pid = int(redis.Redis(port=port).info("server")["process_id"])
    os.kill(pid, signal.SIGKILL)
    if old is not None:
        old.proc.wait(timeout=10)
    # The old server's socket is gone once it is dead; wait until the port can be bound again.
    wait_for(lambda: _port_free(port), timeout=20, interval=0.05, what=f"port {port} to be released")
    svc = stack.start(
        "redis",
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    )
    wait_for(lambda: redis.Redis(port=port).ping(), timeout=20, interval=0.05, what="the new redis")
    return svc


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
