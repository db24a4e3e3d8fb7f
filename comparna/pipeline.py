"""What happens next: the one place that decides which step follows which, for every data source.

::

    new targets (RNA STRAND import, weekly PDB poll, any new source)
      ├─> predictions of every current method ........ predictors.tasks.queue_predictions_task
      │     (comparative methods only where the target already has that input: none yet)
      └─> Rfam family assignment ..................... ingest.tasks.assign_families_task (batches of 100)
            └─> comparative inputs (seed)/(20), aligned by cmalign, stored with the assignment
                  └─> predictions of comparative methods . predictors.tasks.queue_predictions_task
    each queued prediction ........................... predictors.tasks.run_prediction_task (queue "predict";
      development methods' on "develop": predictors.scheduling.LANES)
      (sent in schedule order through a bounded window ... predictors.tasks.dispatch_predictions_task)
      (a web-service method over its concurrency/rate limit: the same task again, with a countdown)
    an admin test run of a spec ...................... predictors.tasks.run_test_task (queue "testrun")
      └─> scores: stored with the prediction's outcome, in the same transaction (predictors.services)
    rankings: nightly, of every subset whose inputs changed ... comparna.tasks.recompute_rankings_task (beat)
      └─> dataset snapshot when settled and changed ... comparna.snapshot_tasks.build_snapshot_task
    after an import or a poll: dataset snapshot if changed  comparna.snapshot_tasks.snapshot_if_changed_task
    after a weekly PDB poll: blind targets linked, scored . comparna.blind.tasks.link_released_task

Steps are Celery tasks sent **by name** once the surrounding transaction commits, so the apps that produce
an event (``ingest``, ``predictors``) never import each other, and the rows a task works on are stored
before it can run. A broker that cannot be reached is logged, never turned into a failure of stored work:
the periodic sweeps (lost or stuck predictions, targets without predictions, targets without a family) send
the work again. Every task is idempotent, so a message sent twice is harmless.

A new data source calls :func:`targets_created` after storing its targets (and :func:`dataset_changed`
when its import is complete); nothing else needs to know about it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from celery import current_app
from django.db import transaction

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """A task of the pipeline: its registered name and the queue it runs on."""

    task: str
    queue: str = "default"


QUEUE_PREDICTIONS = Step("predictors.tasks.queue_predictions_task")
RUN_PREDICTION = Step("predictors.tasks.run_prediction_task", queue="predict")
DISPATCH_PREDICTIONS = Step("predictors.tasks.dispatch_predictions_task", queue="predict")
ASSIGN_FAMILIES = Step("ingest.tasks.assign_families_task", queue="families")
TEST_RUN = Step("predictors.tasks.run_test_task", queue="testrun")
LINK_RELEASED = Step("comparna.blind.tasks.link_released_task")
SNAPSHOT_IF_CHANGED = Step("comparna.snapshot_tasks.snapshot_if_changed_task")
BUILD_SNAPSHOT = Step("comparna.snapshot_tasks.build_snapshot_task")
COMPARE_METHODS = Step("comparna.tasks.compare_methods_task")

#: Targets per family-assignment task: one cmscan run covers a whole batch.
FAMILY_BATCH = 100


def send_after_commit(
    step: Step, calls: Iterable[tuple], *, app=None, countdown: float | None = None
) -> None:
    """After the surrounding transaction commits, send ``step`` once per args tuple in ``calls``.

    The task is looked up by name in ``app`` (the configured Celery app by default): where it is registered
    its own options apply (and eager mode, if configured); elsewhere the message is sent by name. If the
    broker cannot be reached the failure is logged and the rest of the batch is dropped: the sweeps resend
    (a lost test run is shown as such once it expires).
    """
    calls = list(calls)
    if not calls:
        return
    app = app or current_app
    options = {"queue": step.queue}
    if countdown is not None:
        options["countdown"] = countdown

    def send() -> None:
        for n, args in enumerate(calls):
            try:
                app.signature(step.task, args=args, options=options).apply_async()
            except Exception:  # noqa: BLE001 - any broker error: the sweeps recover, stored rows stay
                log.exception(
                    "could not send %s (%d of %d not sent); the periodic sweep will resend",
                    step.task, len(calls) - n, len(calls),
                )
                return

    transaction.on_commit(send)


# ------------------------------------------------------------------------------------------------ events
def targets_created(*, target_ids: Sequence[int]) -> None:
    """New targets are stored (any source): queue every current method on them and assign their families."""
    ids = sorted(target_ids)
    if not ids:
        return
    send_after_commit(QUEUE_PREDICTIONS, [(ids, False)])
    batches = [(ids[k : k + FAMILY_BATCH],) for k in range(0, len(ids), FAMILY_BATCH)]
    send_after_commit(ASSIGN_FAMILIES, batches)


def families_assigned(*, target_ids: Sequence[int]) -> None:
    """Families and comparative inputs are stored: queue the comparative methods on these targets."""
    if target_ids:
        send_after_commit(QUEUE_PREDICTIONS, [(sorted(target_ids), True)])


def predictions_queued(*, prediction_ids: Sequence[int], queue: str | None = None) -> None:
    """Queued predictions are stored (new, re-queued or lost): send each to the ``predict`` workers (or to
    ``queue``: a lane of :data:`predictors.scheduling.LANES`, e.g. ``develop``)."""
    step = RUN_PREDICTION if queue is None else Step(RUN_PREDICTION.task, queue=queue)
    send_after_commit(step, [(pk,) for pk in prediction_ids])


def dispatch_due() -> None:
    """More queued predictions wait in the database than were sent: top the window up when workers reach
    this message (sent among the predictions, so it runs as they drain; predictors.scheduling)."""
    send_after_commit(DISPATCH_PREDICTIONS, [()])


def prediction_deferred(*, prediction_id: int, countdown: float) -> None:
    """A web-service prediction waits for its method's concurrency or rate limit: send it again later."""
    send_after_commit(RUN_PREDICTION, [(prediction_id,)], countdown=countdown)


def dataset_changed(*, dataset_id: int) -> None:
    """An import or a poll of a dataset finished: archive a new snapshot if its data changed."""
    send_after_commit(SNAPSHOT_IF_CHANGED, [(dataset_id,)])


def pdb_poll_finished(*, poll_id: int) -> None:
    """A weekly PDB poll finished: link the released blind targets to their chains, score and rank them."""
    send_after_commit(LINK_RELEASED, [(poll_id,)])


def test_run_requested(*, trial_id: str) -> None:
    """An admin test run of a spec was stored: a worker of the ``testrun`` queue runs it."""
    send_after_commit(TEST_RUN, [(trial_id,)])


def snapshot_reserved(*, snapshot_id: int) -> None:
    """A numbered snapshot was reserved: build its archive in the background."""
    send_after_commit(BUILD_SNAPSHOT, [(snapshot_id,)])


def comparison_requested(*, snapshot_id: int, a_id: int, b_id: int) -> None:
    """A comparison page asked for a pair too large to compare in a request: computed in the background."""
    send_after_commit(COMPARE_METHODS, [(snapshot_id, a_id, b_id)])
