"""Workers on another host: web, PostgreSQL, Redis, beat and the default worker in one network namespace
("host A"), the prediction worker in another ("host B") that reaches A only over a veth link, sees its own
data and jobs directories and not A's data directory (a tmpfs over it in its own mount namespace), and
shares only the database, the broker and the images store.

Real predictors run on B for a slice of real RNA STRAND, an admin test run goes through B's ``testrun``
queue, the default worker on A ranks, gunicorn on A serves the ranking, and /readyz on A counts B's worker.
Needs root (``ip netns``); skipped otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.e2e.stack import REPO, VENV_BIN, _pg_bin, start_service, wait_for
from tests.support.strand_slice import make_strand_slice

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="needs root and iproute2"),
]

METHODS = ("RNAfold-MFE", "LinearFold-V")


def sh(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, timeout=120, **kw)


@contextlib.contextmanager
def two_hosts():
    """Two network namespaces joined by a veth pair: (name A, name B, address A, address B)."""
    tag = secrets.token_hex(3)
    a, b = f"cmp-a-{tag}", f"cmp-b-{tag}"
    octet = 100 + secrets.randbelow(100)
    ip_a, ip_b = f"10.231.{octet}.1", f"10.231.{octet}.2"
    sh("ip", "netns", "add", a)
    sh("ip", "netns", "add", b)
    try:
        sh("ip", "link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}")
        sh("ip", "link", "set", f"va{tag}", "netns", a)
        sh("ip", "link", "set", f"vb{tag}", "netns", b)
        for ns, dev, ip in ((a, f"va{tag}", ip_a), (b, f"vb{tag}", ip_b)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/30", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield a, b, ip_a, ip_b
    finally:
        for ns in (a, b):
            pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            sh("ip", "netns", "del", ns, check=False)


@contextlib.contextmanager
def postgres_in(ns: str, ip: str, peer_network: str):
    """A fresh PostgreSQL cluster listening on ``ip`` inside ``ns``, trusting ``peer_network``."""
    bindir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="comparna-pg-ns-"))
    shutil.chown(root, "postgres")
    os.chmod(root, 0o755)
    data = root / "data"

    def as_postgres(*argv: str) -> None:
        command = " ".join(shlex_quote(x) for x in argv)
        sh("ip", "netns", "exec", ns, "su", "postgres", "-s", "/bin/sh", "-c", command)

    as_postgres(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write(f"host all all {peer_network} trust\n")
    opts = f"-p 5432 -k {root} -c listen_addresses={ip} -c fsync=off -c max_connections=200"
    try:
        as_postgres(
            str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", opts, "-w", "start"
        )
        as_postgres(str(bindir / "createdb"), "-h", ip, "-p", "5432", "-U", "postgres", "comparna")
        yield f"postgres://postgres@{ip}:5432/comparna"
    finally:
        with contextlib.suppress(Exception):
            as_postgres(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


def shlex_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def test_a_prediction_worker_on_another_host(tmp_path, rnastrand_archive):
    slice_dir = tmp_path / "slice"
    make_strand_slice(
        rnastrand_archive, slice_dir, prefixes={"SPR": 4, "PDB": 6}, max_length=200, acgu_only=True
    )
    work = Path(tempfile.mkdtemp(prefix="comparna-two-hosts-"))
    os.chmod(work, 0o711)  # the sandbox's uid passes through to the jobs directories (as under /tmp)
    try:
        _two_hosts_run(work, slice_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _two_hosts_run(work: Path, slice_dir: Path) -> None:
    images = work / "shared-images"  # the one directory both hosts share (besides database and broker)
    images.mkdir()
    services = []
    with two_hosts() as (ns_a, ns_b, ip_a, ip_b):
        network = ip_a.rsplit(".", 1)[0] + ".0/30"
        with postgres_in(ns_a, ip_a, network) as database_url:
            common = {
                **os.environ,
                "DATABASE_URL": database_url,
                "CELERY_BROKER_URL": f"redis://{ip_a}:6379/0",
                "COMPARNA_IMAGES_DIR": str(images),
                "DJANGO_SETTINGS_MODULE": "comparna.settings",
                "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
                "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
                "COMPARNA_HEARTBEAT_S": "2",
                "COMPARNA_MIN_FREE_MB": "1",
                "COMPARNA_READY_QUEUES": "predict,testrun,default",
                "DJANGO_ALLOWED_HOSTS": f"{ip_a},localhost",
            }
            env_a = {
                **common,
                "COMPARNA_DATA_DIR": str(work / "a-data"),
                "COMPARNA_RANKING_INTERVAL_S": "5",
                "COMPARNA_JOBS_DIR": str(work / "a-jobs"),
                # /readyz's details go to the metrics allow-list only (issue 36): the probe comes from ip_a
                "COMPARNA_METRICS_ALLOWED_NETWORKS": f"127.0.0.0/8,{ip_a}/32",
            }
            env_b = {
                **common,
                "COMPARNA_DATA_DIR": str(work / "b-data"),
                "COMPARNA_JOBS_DIR": str(work / "b-jobs"),
            }
            (work / "a-data").mkdir()

            def in_a(*argv: str) -> list[str]:
                return ["ip", "netns", "exec", ns_a, *argv]

            def manage_a(*args: str, timeout: float = 600) -> str:
                proc = subprocess.run(
                    in_a(sys.executable, "manage.py", *args),
                    cwd=REPO,
                    env=env_a,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                assert proc.returncode == 0, proc.stderr[-4000:]
                return proc.stdout

            def start(name, argv, env):
                svc = start_service(name, argv, env=env, logdir=work)
                services.append(svc)
                return svc

            def logs() -> str:
                return "\n".join(f"--- {s.name} ---\n{s.tail(3000)}" for s in services)

            try:
                start(
                    "redis",
                    in_a(
                        "redis-server",
                        "--bind",
                        ip_a,
                        "--port",
                        "6379",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--protected-mode",
                        "no",
                    ),
                    env_a,
                )
                time.sleep(1)
                manage_a("migrate", "--noinput")
                manage_a("sync_predictors", *[x for m in METHODS for x in ("--only", m)])
                celery = str(VENV_BIN / "celery")
                start(
                    "default-a",
                    in_a(
                        celery,
                        "-A",
                        "comparna.celery:app",
                        "worker",
                        "-Q",
                        "default,families",
                        "-n",
                        "default@host-a",
                        "-c",
                        "1",
                        "-l",
                        "info",
                    ),
                    env_a,
                )
                start(
                    "beat-a",
                    in_a(
                        celery,
                        "-A",
                        "comparna.celery:app",
                        "beat",
                        "-l",
                        "info",
                        "-s",
                        str(work / "celerybeat-schedule"),
                    ),
                    env_a,
                )
                port = 8000
                start(
                    "gunicorn-a",
                    in_a(
                        str(VENV_BIN / "gunicorn"),
                        "comparna.wsgi",
                        "-b",
                        f"{ip_a}:{port}",
                        "-w",
                        "1",
                        "--timeout",
                        "120",
                    ),
                    env_a,
                )
                # Host B: its own mount namespace where host A's data directory is an empty tmpfs.
                worker_b = (
                    f"mount -t tmpfs -o size=1m none {shlex_quote(str(work / 'a-data'))} && "
                    f"exec {celery} -A comparna.celery:app worker -Q testrun,predict -n predict@host-b "
                    "-c 2 -l info"
                )
                start(
                    "predict-b",
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns_b,
                        "unshare",
                        "--mount",
                        "--propagation",
                        "private",
                        "sh",
                        "-c",
                        worker_b,
                    ],
                    env_b,
                )

                def get(path: str) -> tuple[int, str]:
                    proc = subprocess.run(
                        in_a(
                            sys.executable,
                            "-c",
                            "import sys, urllib.request, urllib.error\n"
                            "try:\n r = urllib.request.urlopen(sys.argv[1], timeout=30); print(r.status); "
                            "print(r.read().decode())\nexcept urllib.error.HTTPError as e:\n print(e.code); "
                            "print(e.read().decode())",
                            f"http://{ip_a}:{port}{path}",
                        ),
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )
                    status, _, body = proc.stdout.partition("\n")
                    return int(status or 0), body

                ready = wait_for(
                    lambda: get("/readyz")[0] == 200 and get("/readyz")[1],
                    timeout=180,
                    interval=2,
                    what="/readyz on host A to count host B's worker",
                )
                assert json.loads(ready)["checks"]["workers"]["queues"]["predict"] == 1

                manage_a("import_rnastrand", str(slice_dir), "--no-progress")

                def in_db(sql: str):
                    code = (
                        "import json, psycopg, sys\nwith psycopg.connect(sys.argv[1]) as c:\n"
                        " print(json.dumps(c.execute(sys.argv[2]).fetchall(), default=str))"
                    )
                    out = subprocess.run(
                        in_a(sys.executable, "-c", code, database_url, sql),
                        capture_output=True,
                        text=True,
                        timeout=60,
                        check=True,
                    ).stdout
                    return json.loads(out)

                try:
                    wait_for(
                        lambda: in_db("select count(*) from predictors_prediction")[0][0] > 0,
                        timeout=120,
                        interval=2,
                        what="predictions queued",
                    )
                    wait_for(
                        lambda: (
                            not {
                                s
                                for s, _ in in_db(
                                    "select status, count(*) from predictors_prediction group by status"
                                )
                            }
                            & {"queued", "running"}
                        ),
                        timeout=300,
                        interval=3,
                        what="host B to run every prediction",
                    )
                except TimeoutError:
                    pytest.fail(logs())
                by_state = dict(in_db("select status, count(*) from predictors_prediction group by status"))
                assert by_state.get("ok", 0) >= 0.9 * sum(by_state.values()), by_state
                workers = {w for (w,) in in_db("select distinct worker from predictors_prediction")}
                assert workers and all(w for w in workers)
                assert not (work / "a-jobs").exists() or not any((work / "a-jobs").iterdir())
                assert (work / "b-jobs").exists(), "host B's jobs directory was not used"

                # an admin test run goes through host B's testrun queue
                manage_a(
                    "shell",
                    "-c",
                    (
                        "from django.contrib.auth import get_user_model\n"
                        "from django.db import transaction\n"
                        "from predictors.models import MethodVersion\n"
                        "from predictors.services import spec_from_version\n"
                        "from predictors.trials import request_test_run\n"
                        "u = get_user_model().objects.create_superuser('admin', 'a@x.org', 'pw-1')\n"
                        "v = MethodVersion.objects.filter(method__name='RNAfold-MFE').first()\n"
                        "with transaction.atomic():\n"
                        "    request_test_run(spec=spec_from_version(v), sequence='GGGGAAAACCCC', user=u)\n"
                    ),
                )
                try:
                    wait_for(
                        lambda: in_db("select status from predictors_trialrun")[0][0] == "done",
                        timeout=120,
                        interval=2,
                        what="the test run on host B",
                    )
                except TimeoutError:
                    pytest.fail(f"{in_db('select status, result from predictors_trialrun')}\n{logs()}")
                assert in_db("select worker from predictors_trialrun")[0][0]

                # rankings by host A's default worker (beat every 5 s), served by host A's gunicorn
                try:
                    wait_for(
                        lambda: in_db("select count(*) from comparna_rankingsnapshot")[0][0] > 0,
                        timeout=180,
                        interval=2,
                        what="rankings on host A",
                    )
                except TimeoutError:
                    pytest.fail(logs())
                status, page = get("/rankings/rnastrand/")
                assert status == 200 and all(m in page for m in METHODS)
            finally:
                for svc in reversed(services):
                    svc.stop()
