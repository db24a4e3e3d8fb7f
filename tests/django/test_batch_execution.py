"""Batched execution of queued predictions (predictors.execution) with the real sandbox and database.

One message's worker claims other queued predictions of the same method version and runs them in one
launch; each ends exactly once in a final state with its own runtime and scores, the misbehaving target
alone fails, a dead worker's batch is taken over whole, and what the time budget did not start goes back to
the queue unrun.
"""

from __future__ import annotations

import subprocess

import pytest

from comparna.models import Score
from predictors.core.runners import SandboxRunner
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import process_token
from predictors.execution import cost_model, execute_prediction
from predictors.models import Prediction
from predictors.services import queue_predictions, register_spec
from tests.factories import make_dataset, make_target

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed"),
]

SEQS = ["GGGGAAACCCC", "GGGAAAUCCC", "GCGCAAAAGCGU", "GGGGGAAAAUCCCC", "ACGUACGUAC", "GGCGAAAGCC"]
LOOPS = SEQS[2]


def selftest(**kw) -> PredictorSpec:
    fields = dict(time_limit_s=2.0, memory_limit_mb=256, batch=True, max_length=12)
    fields.update(kw)
    return PredictorSpec(
        name="selftest", program="selftest", version="1",
        argv=("{python}", "-m", "predictors.programs.selftest_fold", "--fault", "loop", "--on", LOOPS,
              "{fasta}"),
        **fields,
    )


@pytest.fixture
def queued():
    dataset = make_dataset("strand")
    targets = [make_target(s, "." * len(s), dataset=dataset) for s in SEQS]
    version = register_spec(spec=selftest(), from_catalogue=False, active=True)
    queue_predictions(versions=[version], targets=targets)
    preds = {p.target.sequence: p for p in Prediction.objects.filter(method_version=version)}
    return version, [preds[s] for s in SEQS]


def final(p: Prediction) -> Prediction:
    p.refresh_from_db()
    return p


def test_one_message_runs_a_batch_and_every_target_ends_once(queued, settings, monkeypatch):
    version, preds = queued
    settings.PREDICTION_BATCH_MAX = 100
    monkeypatch.setattr("predictors.execution.PROBE_BATCH", 4)  # fewer than this fixture's targets
    # No runtime measured yet: a probe batch of 4 (shortest first after the head).
    head = execute_prediction(prediction_id=preds[0].pk)
    assert head.status == "ok"
    # (the target over the length limit was recorded "too long" when queued: never part of a batch)
    done = [p for p in map(final, preds) if p.status not in ("queued", "too_long")]
    assert len(done) == 4 and all(p.attempts == 1 and p.finished_at for p in done)
    assert {p.limits.get("batch_size") for p in done} == {4}
    assert cost_model(version, selftest()).scale is not None
    # The rest in the next message's batch, the long one recorded without running.
    rest = next(p for p in preds if final(p).status == "queued")
    execute_prediction(prediction_id=rest.pk)
    by_seq = {p.target.sequence: final(p) for p in preds}
    assert by_seq[LOOPS].status == "timeout" and "wall-clock" in by_seq[LOOPS].error
    assert by_seq["GGGGGAAAAUCCCC"].status == "too_long"
    ok = [p for p in by_seq.values() if p.status == "ok"]
    assert len(ok) == 4 and all(0 < p.runtime_s < 2 and p.runner == "sandbox-bwrap" for p in ok)
    assert all(p.attempts == (0 if p.status == "too_long" else 1) for p in by_seq.values())
    assert all(Score.objects.filter(prediction=p).count() == 1 for p in ok)
    assert not Score.objects.filter(prediction__status__in=["timeout", "too_long"]).exists()
    # the claimed predictions' own messages change nothing
    for p in preds:
        again = execute_prediction(prediction_id=p.pk)
        stored = by_seq[p.target.sequence]
        assert (again.status, again.attempts) == (stored.status, stored.attempts)


def test_a_dead_workers_batch_is_taken_over_whole(queued):
    _, preds = queued
    sleeper = subprocess.Popen(["sleep", "30"])
    dead = process_token(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    members = [preds[0], preds[1], preds[4]]
    running = Prediction.objects.filter(pk__in=[p.pk for p in members])
    running.update(status="running", attempts=1, worker=dead)
    execute_prediction(prediction_id=preds[1].pk)
    for p in members:
        assert final(p).status == "ok" and p.attempts == 2 and p.worker == process_token()
    # queued ones may have joined the batch (attempt 1); none ran twice
    assert all(final(p).attempts <= 2 for p in preds)


def test_a_live_workers_prediction_is_left_alone(queued):
    _, preds = queued
    Prediction.objects.filter(pk=preds[0].pk).update(status="running", worker=process_token())
    assert execute_prediction(prediction_id=preds[0].pk).status == "running"
    expected = {p.pk: "too_long" if len(p.target.sequence) > 12 else "queued" for p in preds}
    assert all(final(p).status == expected[p.pk] for p in preds[1:])


def test_targets_the_budget_did_not_start_go_back_unrun(queued, settings):
    _, preds = queued
    settings.PREDICTION_BATCH_S = 0.0001
    head = execute_prediction(prediction_id=preds[0].pk)
    assert head.status == "ok"
    states = [final(p) for p in preds]
    ran = [p for p in states if p.status != "queued"]
    back = [p for p in states if p.status == "queued"]
    assert len(ran) >= 1 and back
    assert all(p.attempts == 0 and p.worker == "" and p.finished_at is None for p in back)


def test_sweep_waits_for_a_batch_on_another_host(queued, settings):
    from datetime import timedelta

    from django.utils import timezone

    from predictors.services import requeue_stuck_predictions

    _, preds = queued
    elsewhere = "another-boot.4026531836.123.456"  # a worker this host cannot check
    now = timezone.now()
    # past its own 2 s limit, but within limit + PREDICTION_BATCH_S: its batch may still be running
    Prediction.objects.filter(pk=preds[0].pk).update(
        status="running", worker=elsewhere, started_at=now - timedelta(seconds=30))
    long_ago = now - timedelta(seconds=settings.PREDICTION_BATCH_S + 10)
    Prediction.objects.filter(pk=preds[1].pk).update(status="running", worker=elsewhere, started_at=long_ago)
    assert requeue_stuck_predictions(grace_s=0)["stuck"] == 1
    assert (final(preds[0]).status, final(preds[1]).status) == ("running", "queued")
