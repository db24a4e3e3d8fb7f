"""At-least-once without duplicates, on the real stack (PostgreSQL, Redis, Celery workers and beat).

(a) The prediction worker is killed with SIGKILL in the middle of a batch: the predictions it was running
(one launch of up to ``BATCH_MAX`` targets, predictors.execution) stay ``running`` until a new worker takes
them over (a message of one of them finds its worker dead) or the sweep (requeue_stuck_predictions) puts them
back; a new worker finishes the batch.
(b) Redis crashes in the middle of a batch and an empty one takes its place (``--save ''``: the queued
messages are lost): the periodic sweep, fired by beat, re-sends the predictions still queued.
Either way every prediction ends exactly once in a final state.
"""

from __future__ import annotations

import signal
import time

import psycopg
import pytest

from tests.e2e.stack import Stack, production_stack, restart_redis, wait_for
from tests.support.strand_slice import make_strand_slice

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

N_TARGETS = 30
#: Targets per launch (COMPARNA_BATCH_MAX): small, so that a batch is seen under way.
BATCH_MAX = 3
FINAL = {"ok", "failed", "timeout", "too_long", "unparsable", "infrastructure_error"}
# A short time limit lets the sweep see the killed worker's prediction as stuck within seconds.
SHORT_LIMIT = (
    "from dataclasses import replace; from predictors.catalogue import get_spec; "
    "from predictors.services import register_spec; "
    "[register_spec(spec=replace(get_spec(n), time_limit_s=3.0)) for n in ('RNAfold-MFE', 'LinearFold-V')]"
)

TRIM = (
    "from comparna.models import Target; n = Target.objects.count(); "
    f"keep = list(Target.objects.order_by('pk').values_list('pk', flat=True)[:{N_TARGETS}]); "
    "Target.objects.exclude(pk__in=keep).delete(); print(n)"
)


def states(db: str, method: str) -> dict[str, int]:
    sql = """
        select p.status, count(*) from predictors_prediction p
        join predictors_methodversion v on v.id = p.method_version_id
        join predictors_method m on m.id = v.method_id
        where m.name = %s group by p.status
    """
    with psycopg.connect(db) as conn:
        return dict(conn.execute(sql, (method,)).fetchall())


def rows(db: str, method: str) -> list[tuple]:
    sql = """
        select p.target_id, p.status, p.attempts, p.finished_at is not null, p.runner,
               (select count(*) from comparna_score s where s.prediction_id = p.id)
        from predictors_prediction p
        join predictors_methodversion v on v.id = p.method_version_id
        join predictors_method m on m.id = v.method_id
        where m.name = %s
    """
    with psycopg.connect(db) as conn:
        return conn.execute(sql, (method,)).fetchall()


def assert_exactly_once(db: str, method: str, n_targets: int) -> list[tuple]:
    found = rows(db, method)
    assert len(found) == n_targets, f"{len(found)} predictions for {n_targets} targets"
    assert len({r[0] for r in found}) == n_targets  # one row per target: the unique constraint held
    not_final = [r for r in found if r[1] not in FINAL]
    assert not not_final, f"left queued/running: {not_final}"
    assert all(r[2] >= 1 and r[3] for r in found), "a final prediction with no attempt or no finish time"
    assert all(r[5] == 1 for r in found if r[1] == "ok"), "an ok prediction scored zero or several times"
    with psycopg.connect(db) as conn:
        dup = conn.execute(
            "select method_version_id, target_id from predictors_prediction "
            "group by method_version_id, target_id having count(*) > 1"
        ).fetchall()
    assert not dup
    return found


def finished(db: str, method: str) -> int:
    s = states(db, method)
    return sum(n for k, n in s.items() if k in FINAL)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, rnastrand_archive):
    slice_dir = tmp_path_factory.mktemp("slice")
    # Import drops some entries (redundant or unusable ones), so more than N_TARGETS files are taken.
    prefixes = {"SPR": 40, "PDB": 60, "RFA": 40, "ASE": 30}
    make_strand_slice(rnastrand_archive, slice_dir, prefixes=prefixes, max_length=200)
    env = {"COMPARNA_SWEEP_INTERVAL_S": "2", "COMPARNA_RESEND_AFTER_S": "4",
           "COMPARNA_BATCH_MAX": str(BATCH_MAX)}
    with production_stack(extra_env=env) as stack:
        stack.manage("sync_predictors")
        stack.manage("shell", "-c", SHORT_LIMIT)
        stack.manage("import_rnastrand", str(slice_dir), "--no-progress")
        # Exactly N_TARGETS targets: the others are removed before anything is queued.
        out = stack.manage("shell", "-c", TRIM).stdout
        assert int(out.split()[-1]) >= N_TARGETS, f"too few targets imported: {out}"
        # The import's pipeline messages (queue every method, assign families) are dropped: these tests
        # queue one method at a time by hand and count exactly what the predict workers do with it.
        import redis

        assert redis.Redis(port=stack.redis_port).delete("default", "families") == 2
        yield stack


def test_worker_killed_mid_batch(stack: Stack):
    db = stack.env["DATABASE_URL"]
    method = "RNAfold-MFE"
    worker = stack.start_worker("predict", concurrency=1)
    out = stack.manage("queue_predictions", "--method", method).stdout
    assert int(out.split()[0]) == N_TARGETS

    # Kill the worker's whole process group while it runs a batch, some but not all being done.
    def mid_batch() -> bool:
        s = states(db, method)
        return s.get("running", 0) >= 1 and 3 <= finished(db, method) < N_TARGETS - BATCH_MAX

    try:
        wait_for(mid_batch, timeout=90, interval=0.02, what="the batch to be under way")
    except TimeoutError:
        pytest.fail(f"{states(db, method)}\n{stack.logs()}")
    worker.stop(signal.SIGKILL)
    at_kill = states(db, method)
    assert 0 < finished(db, method) < N_TARGETS, at_kill
    # Usually the killed worker's batch is orphaned in "running"; if the kill fell between two batches,
    # the worker's prefetched message is lost unacked instead and its prediction stays "queued". A message
    # of an orphaned prediction still in the queue makes the new worker take the dead worker's batch over;
    # the sweep puts back whatever is still orphaned.
    orphaned = at_kill.get("running", 0)
    assert 0 <= orphaned <= BATCH_MAX, at_kill

    stack.start_worker("predict", name="worker-predict-2", concurrency=1)
    time.sleep(3.5)  # past the 3 s time limit of an orphaned run
    sweep = (
        "from predictors.services import requeue_stuck_predictions as r; "
        "print(r(grace_s=0, lost_after_s=0))"
    )
    swept = stack.manage("shell", "-c", sweep).stdout
    stuck = int(swept.split("'stuck': ")[1].split(",")[0])
    assert 0 <= stuck <= orphaned, swept
    try:
        wait_for(lambda: finished(db, method) == N_TARGETS, timeout=90, interval=0.5, what="the batch")
    except TimeoutError:
        pytest.fail(f"{states(db, method)}\n{stack.logs()}")
    found = assert_exactly_once(db, method, N_TARGETS)
    assert sum(1 for r in found if r[1] == "ok") == N_TARGETS
    # Every orphaned running prediction ran again (a second attempt) and was stored once; messages sent
    # twice by the sweep for still-queued predictions never ran anything twice.
    assert sum(1 for r in found if r[2] == 2) == orphaned, sorted(r[2] for r in found)
    # the predictions ran in batches (several targets per sandbox launch)
    sql = """select count(*) from predictors_prediction p
             join predictors_methodversion v on v.id = p.method_version_id
             join predictors_method m on m.id = v.method_id
             where m.name = %s and (p.limits->>'batch_size')::int > 1"""
    with psycopg.connect(db) as conn:
        assert conn.execute(sql, (method,)).fetchone()[0] >= N_TARGETS // 2


def test_redis_restarted_mid_batch(stack: Stack):
    db = stack.env["DATABASE_URL"]
    method = "LinearFold-V"
    if "worker-predict-2" not in stack.services or stack.services["worker-predict-2"].proc.poll() is not None:
        stack.start_worker("predict", name="worker-predict-2", concurrency=1)
    out = stack.manage("queue_predictions", "--method", method).stdout
    assert int(out.split()[0]) == N_TARGETS
    try:
        # (batches finish several targets at once: the window must be wider than one batch or two)
        wait_for(lambda: 3 <= finished(db, method) < N_TARGETS - 2 * BATCH_MAX, timeout=90, interval=0.02,
                 what="the batch to be under way")
    except TimeoutError:
        pytest.fail(f"{states(db, method)}\n{stack.logs()}")

    restart_redis(stack)
    after = finished(db, method)
    assert after < N_TARGETS
    import redis

    # The new Redis is empty: the messages of the still-queued predictions are gone.
    assert redis.Redis(port=stack.redis_port).llen("predict") == 0
    time.sleep(2)
    # at most the batch under way at the restart finishes
    assert finished(db, method) <= after + BATCH_MAX, "predictions finished with no message to run them"

    # Beat fires the sweep every 2 s; predictions queued for more than 4 s are sent again.
    stack.start_worker("default")
    stack.start_beat()
    try:
        wait_for(lambda: finished(db, method) == N_TARGETS, timeout=120, interval=0.5, what="the batch")
    except TimeoutError:
        pytest.fail(f"{states(db, method)}\n{stack.logs()}")
    found = assert_exactly_once(db, method, N_TARGETS)
    assert sum(1 for r in found if r[1] == "ok") == N_TARGETS
    assert "requeue_stuck_predictions_task" in stack.services["worker-default"].tail(10**6)
