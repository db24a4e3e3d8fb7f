"""queue_predictions with dataset priorities (issue 38): a PDB-derived test set imported after RNA STRAND was
queued waits for RNA STRAND's first LEAD_BLOCKS blocks, then runs alone (the backlog moves back)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from comparna import pipeline
from comparna.models import Dataset
from predictors.catalogue import get_spec
from predictors.models import Prediction
from predictors.scheduling import BLOCK_TARGETS, LEAD_BLOCKS
from predictors.services import queue_predictions, sync_predictors
from tests.factories import make_dataset, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(pipeline, "predictions_queued", lambda *, prediction_ids: None)
    monkeypatch.setattr(pipeline, "dispatch_due", lambda: None)


def targets(n: int, slug: str, priority: int | None = None):
    dataset = make_dataset(slug)
    if priority is not None:
        Dataset.objects.filter(pk=dataset.pk).update(provenance={"schedule_priority": priority})
    return [make_target("GC" * (10 + k % 30), "." * (2 * (10 + k % 30)), dataset=dataset) for k in range(n)]


def ranks_of(slug: str) -> list[int]:
    return sorted(set(Prediction.objects.filter(target__dataset__slug=slug).values_list("schedule_rank",
                                                                                           flat=True)))


def test_a_small_test_set_runs_alone_after_the_first_benchmarks_lead():
    versions = sync_predictors(specs=[get_spec("RNAfold-MFE")])
    strand = targets(30 * BLOCK_TARGETS, "rnastrand")
    queue_predictions(versions=versions, targets=strand)
    assert ranks_of("rnastrand") == list(range(30))
    Prediction.objects.update(dispatched_at=None)  # none sent yet beyond the first (the workers start later)
    Prediction.objects.filter(schedule_rank=0).update(dispatched_at=timezone.now())
    spot = targets(3 * BLOCK_TARGETS - 2, "spot-rna-pdb", priority=1)
    rna3db = targets(2 * BLOCK_TARGETS, "rna3db-2d", priority=2)
    queue_predictions(versions=versions, targets=spot + rna3db)
    assert ranks_of("spot-rna-pdb") == [LEAD_BLOCKS, LEAD_BLOCKS + 1, LEAD_BLOCKS + 2]
    assert ranks_of("rna3db-2d") == [LEAD_BLOCKS + 3, LEAD_BLOCKS + 4]
    # RNA STRAND's first blocks stay; its later ones moved back by the small set's three blocks
    assert ranks_of("rnastrand") == list(range(LEAD_BLOCKS)) + list(range(LEAD_BLOCKS + 3, 30 + 3))
    # a larger set imported on its own later starts after the small set's last block, not beside it
    bprna = targets(BLOCK_TARGETS, "bprna-ts0", priority=2)
    Prediction.objects.exclude(schedule_rank=0).update(dispatched_at=None)  # the backlog not sent yet
    queue_predictions(versions=versions, targets=bprna)
    assert ranks_of("bprna-ts0") == [LEAD_BLOCKS + 3]
    # a second queueing changes nothing
    queue_predictions(versions=versions, targets=spot + rna3db)
    assert ranks_of("spot-rna-pdb") == [LEAD_BLOCKS, LEAD_BLOCKS + 1, LEAD_BLOCKS + 2]
