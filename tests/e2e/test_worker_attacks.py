"""Issue 11's attacks through a real Celery worker on the production stack, and a pool child killed mid-run.

Hostile registered methods run in the ``predict`` worker (PostgreSQL, Redis, gunicorn): one reads the
data directory, three turn their output file into a link to ``/proc/self/environ`` (the worker's
environment holds ``DJANGO_SECRET_KEY`` and ``DATABASE_URL``), ``/etc/shadow`` and a root-only 0600
file. What the API serves and the database stores holds none of it. Then a pool child is killed with
SIGKILL in the middle of a run: the redelivered task takes the prediction over at once (no waiting for
time limit + grace), the killed run's sandbox is gone and its run directory is removed by the
replacement child.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import psycopg
import pytest
import requests

from tests.e2e.stack import production_stack, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

FINAL = {"ok", "failed", "timeout", "too_long", "unparsable"}

SETUP = """
import json
from predictors.core.spec import PredictorSpec
from predictors.services import register_spec
from tests.factories import make_dataset, make_target
target = make_target("GGGGAAACCCC", "((((...))))", dataset=make_dataset("strand"))
for name, argv, out, *fmt in json.loads(METHODS):
    spec = PredictorSpec(name=name, program="attacker", version="1", argv=argv, output_file=out,
                         time_limit_s=600, memory_limit_mb=512, output_format=(fmt or ["dot-bracket"])[0])
    register_spec(spec=spec, from_catalogue=False, active=True)
print(target.pk)
"""


# Shell programs of issue 26's attacks (braces doubled: single ones are argv placeholders).
DEEP_TREE = (
    "i=0; while [ $i -lt 1500 ]; do mkdir d && cd d || exit 1; i=$((i+1)); done; "
    "echo '((((...))))'; : {sequence}"
)
DISK_FILLER = (
    "for i in $(seq 40); do head -c 15728640 /dev/zero > f$i || exit 1; done; "
    "echo '((((...))))'; : {sequence}"
)
HUGE_INT = "printf '{{\"pairs\": [[1, %s]]}}' \"$(head -c 5000 /dev/zero | tr '\\0' 9)\"; : {sequence}"


def query(db: str, sql: str, *args) -> list[tuple]:
    with psycopg.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def by_method(db: str) -> dict[str, tuple]:
    rows = query(
        db,
        "select m.name, p.status, p.error, p.stderr_tail, p.attempts, p.worker, p.id "
        "from predictors_prediction p join predictors_methodversion v on v.id = p.method_version_id "
        "join predictors_method m on m.id = v.method_id",
    )
    return {r[0]: r[1:] for r in rows}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    import json

    secret_key = f"secret-key-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    secrets_dir = tmp_path_factory.mktemp("secrets")
    file_secret = f"root-only-{uuid.uuid4().hex}"
    secret_file = secrets_dir / "secret.txt"
    secret_file.write_text(f"((((...))))\n{file_secret}\n")
    secret_file.chmod(0o600)
    marker = f"sleeper{uuid.uuid4().hex}"
    with production_stack(extra_env={"DJANGO_SECRET_KEY": secret_key}) as stack:
        data_dir = Path(stack.env["COMPARNA_DATA_DIR"])
        data_dir.mkdir(parents=True, exist_ok=True)
        db_secret = f"db-secret-{uuid.uuid4().hex}"
        (data_dir / "comparna.sqlite3").write_bytes(b"SQLite format 3\0" + db_secret.encode())
        link = 'ln -s "$0" out.db; : {sequence}'
        methods = [
            ["Dumper", ["/bin/sh", "-c", 'cat "$0"/*; ls -la "$0"; : {sequence}', str(data_dir)], None],
            ["Linker-environ", ["/bin/sh", "-c", link, "/proc/self/environ"], "out.db"],
            ["Linker-shadow", ["/bin/sh", "-c", link, "/etc/shadow"], "out.db"],
            ["Linker-file", ["/bin/sh", "-c", link, str(secret_file)], "out.db"],
            ["Sleeper", ["/bin/sh", "-c", f"sleep 6; echo '((((...))))'; : {marker} {{sequence}}"], None],
            # Issue 26: a tree too deep for shutil.rmtree, 40 files of 15 MB, a 5000-digit integer.
            ["DeepTree", ["/bin/sh", "-c", DEEP_TREE], None],
            ["DiskFiller", ["/bin/sh", "-c", DISK_FILLER], None],
            ["HugeInt", ["/bin/sh", "-c", HUGE_INT], None, "pairs-json"],
        ]
        code = f"METHODS = {json.dumps(methods)!r}\n" + SETUP
        out = stack.manage("shell", "-c", code).stdout
        stack.target = int(out.split()[-1])
        stack.secrets = (secret_key, file_secret, db_secret, stack.env["DATABASE_URL"])
        stack.marker = marker
        stack.start_web()
        stack.start_worker("predict", concurrency=2)
        yield stack


def test_hostile_methods_leak_nothing_through_the_worker(stack):
    db = stack.env["DATABASE_URL"]
    attackers = ("Dumper", "Linker-environ", "Linker-shadow", "Linker-file")
    args = [a for m in attackers for a in ("--method", m)]
    stack.manage("queue_predictions", *args)
    try:
        wait_for(lambda: all(by_method(db).get(m, ("",))[0] in FINAL for m in attackers), timeout=120,
                 what="the hostile predictions")
    except TimeoutError:
        pytest.fail(f"{by_method(db)}\n{stack.logs()}")
    found = by_method(db)
    assert "No such file or directory" in found["Dumper"][1] + found["Dumper"][2]
    for m in attackers[1:]:
        assert found[m][0] == "unparsable" and "symbolic link" in found[m][1], found[m]
    served = requests.get(f"{stack.web_url}/api/predictions/", params={"target": stack.target}, timeout=30)
    assert served.status_code == 200 and "symbolic link" in served.text
    stored = " ".join(str(v) for row in query(db, "select * from predictors_prediction") for v in row)
    for secret in stack.secrets:
        assert secret not in served.text and secret not in stored
    assert "SQLite format 3" not in stored and "root:" not in stored


def _processes_with(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_pool_child_killed_mid_run_is_taken_over_at_once(stack):
    from predictors.core.workspace import RUN_DIR_RE, jobs_root, token_alive

    db = stack.env["DATABASE_URL"]
    stack.manage("queue_predictions", "--method", "Sleeper")
    try:
        wait_for(lambda: by_method(db)["Sleeper"][0] == "running" and _processes_with(stack.marker),
                 timeout=60, interval=0.05, what="the sleeper to run")
    except TimeoutError:
        pytest.fail(f"{by_method(db)}\n{stack.logs()}")
    token = by_method(db)["Sleeper"][4]
    child = int(token.split(".")[2])  # the pool child running it (see workspace.process_token)
    assert token_alive(token) is True
    os.kill(child, signal.SIGKILL)
    killed_at = time.monotonic()
    try:
        wait_for(lambda: by_method(db)["Sleeper"][0] in FINAL, timeout=90, what="the taken-over run")
    except TimeoutError:
        pytest.fail(f"{by_method(db)}\n{stack.logs()}")
    took = time.monotonic() - killed_at
    status, error, _tail, attempts, worker, _pk = by_method(db)["Sleeper"]
    # Done by the redelivered task well before the 600 s limit (+ 300 s grace) the sweep would wait.
    assert status == "ok" and attempts == 2 and worker != token, by_method(db)["Sleeper"]
    assert took < 60
    assert token_alive(token) is False
    # The first attempt's sandbox died with its pool child; its run directory was removed when the
    # replacement child started.
    assert len(_processes_with(stack.marker)) == 0
    leftovers = [d for d in jobs_root().iterdir() if RUN_DIR_RE.match(d.name) and token in d.name]
    assert leftovers == []
    assert "taken over" in stack.services["worker-predict"].tail(10**6)


def test_issue_26_attacks_end_in_final_outcomes_through_the_worker(stack):
    """A deep tree, a full job dir and a 5000-digit integer: each a final outcome on its first attempt, no
    run dir left behind, and the periodic sweep runs clean afterwards."""
    from predictors.core.workspace import RUN_DIR_RE, jobs_root

    db = stack.env["DATABASE_URL"]
    attackers = ("DeepTree", "DiskFiller", "HugeInt")
    stack.manage("queue_predictions", *[a for m in attackers for a in ("--method", m)])
    try:
        wait_for(lambda: all(by_method(db).get(m, ("",))[0] in FINAL for m in attackers), timeout=120,
                 what="issue 26's predictions")
    except TimeoutError:
        pytest.fail(f"{by_method(db)}\n{stack.logs()}")
    found = by_method(db)
    assert found["DeepTree"][0] == "ok" and found["DeepTree"][3] == 1, found["DeepTree"]
    if os.geteuid() == 0:  # the job-dir tmpfs is a root worker's
        assert found["DiskFiller"][0] == "failed", found["DiskFiller"]
        assert found["DiskFiller"][1].startswith("disk quota exceeded"), found["DiskFiller"]
    assert found["HugeInt"][0] == "unparsable" and "5000 digits" in found["HugeInt"][1], found["HugeInt"]
    assert found["HugeInt"][3] == 1
    workers = {found[m][4] for m in attackers}
    runs = [d for d in jobs_root().iterdir() if RUN_DIR_RE.match(d.name)]
    assert [d for d in runs if any(w in d.name for w in workers)] == []
    swept = stack.manage(
        "shell", "-c", "from predictors.tasks import requeue_stuck_predictions_task as t; print(t())"
    )
    assert "stuck" in swept.stdout, swept.stdout + swept.stderr
