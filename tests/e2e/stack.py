"""Start and stop the real production stack on loopback for integration tests.

PostgreSQL refuses to run as root, so as root the cluster is created and started as the ``postgres`` user
(``su postgres -c ...``) in a temporary directory that user owns. Everything listens on 127.0.0.1 only, on
free ports, and is stopped (process groups killed) when the context exits.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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


# Clusters of this process copied instead of running initdb (4 s) and migrate (10 s: mostly Django starting)
# for every stack: an initdb'd one, and migrated ones by the fingerprint of the migration files they were
# migrated with. A copy of a stopped cluster is the cluster those commands would have made again (the data
# migrations only touch existing rows; only Django's own apps listen to post_migrate).
_TEMPLATES: dict[str, Path] = {}


def _migrations_fingerprint() -> str:
    digest = hashlib.sha256()
    for top in ("comparna", "predictors", "ingest"):
        for path in sorted((REPO / top).rglob("migrations/*.py")):
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _template_root() -> Path:
    if "root" not in _TEMPLATES:
        root = Path(tempfile.mkdtemp(prefix="comparna-pg-templates-"))
        if os.geteuid() == 0:
            shutil.chown(root, "postgres")
            os.chmod(root, 0o755)
        atexit.register(shutil.rmtree, root, True)
        _TEMPLATES["root"] = root
    return _TEMPLATES["root"]


def _pg_run(cmd: list[str]) -> None:
    """Run a PostgreSQL command (as the ``postgres`` user when root: the server refuses to run as root)."""
    if os.geteuid() == 0:
        cmd = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(c) for c in cmd)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)


def _initdb_template() -> Path:
    if "initdb" not in _TEMPLATES:
        data = _template_root() / "initdb"
        _pg_run([str(_pg_bin() / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"])
        _TEMPLATES["initdb"] = data
    return _TEMPLATES["initdb"]


@contextlib.contextmanager
def postgres(migrate: Callable[[str], object] | None = None) -> Iterator[str]:
    """Yield a DATABASE_URL of a fresh PostgreSQL cluster on 127.0.0.1 (a copy of one initdb'd per process).

    With ``migrate`` (called with the URL: it migrates the empty database) the database is migrated: a copy of
    the cluster migrated earlier in this process with the same migration files, else ``migrate`` is called and
    the migrated cluster kept for the next ones.
    """
    bindir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="comparna-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    port = free_port()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        os.chmod(root, 0o755)

    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    start = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", opts, "-w", "start"]
    fingerprint = _migrations_fingerprint() if migrate is not None else ""
    migrated = _TEMPLATES.get(f"migrated-{fingerprint}") if migrate is not None else None
    url = f"postgres://postgres@127.0.0.1:{port}/comparna"
    try:
        _pg_run(["cp", "-a", str(migrated or _initdb_template()), str(data)])
        _pg_run(start)
        if migrated is None:
            _pg_run(
                [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "comparna"]
            )
            if migrate is not None:
                migrate(url)
                if _migrations_fingerprint() == fingerprint:  # unchanged while it ran: keep a stopped copy
                    _pg_run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
                    template = _template_root() / f"migrated-{fingerprint[:16]}"
                    _pg_run(["cp", "-a", str(data), str(template)])
                    _TEMPLATES[f"migrated-{fingerprint}"] = template
                    _pg_run(start)
        yield url
    finally:
        with contextlib.suppress(Exception):
            _pg_run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
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
            self.send_signal(sig)
            self.wait_stopped(timeout)

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the process group, unless the process has ended."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def wait_stopped(self, timeout: float = 20) -> None:
        """Wait for the process to end; SIGKILL its group after ``timeout`` seconds."""
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
    with redis_server() as (redis_port, _):

        def environment(database_url: str) -> dict:
            return {
                **os.environ,
                "DATABASE_URL": database_url,
                "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
                "COMPARNA_DATA_DIR": str(workdir / "data"),
                "DJANGO_SETTINGS_MODULE": "comparna.settings",
                "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
                **(extra_env or {}),
            }

        def migrate(database_url: str) -> None:
            Stack(env=environment(database_url), workdir=workdir).manage("migrate", "--noinput")

        # migrated once a process: the next stacks start from a copy of that cluster
        with postgres(migrate=migrate) as database_url:
            stack = Stack(env=environment(database_url), workdir=workdir, redis_port=redis_port)
            try:
                yield stack
            finally:
                # every service told to stop (SIGTERM) at once, then each waited for: their shutdowns overlap
                services = list(reversed(stack.services.values()))
                for svc in services:
                    svc.send_signal(signal.SIGTERM)
                for svc in services:
                    svc.wait_stopped()
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
