"""The inputs of a nightly run of every subset ranking, read with a few whole-table queries
(``RankingInputs``, issue 28), are the ones each subset's own queries give: the same table (methods in the
database's order of their names, targets in the subset's order), identity, target ids and failure mask."""

from __future__ import annotations

import random

import numpy as np
import pytest

from comparna.models import Subset
from comparna.services.rankings import RankingInputs, rank_subset, recompute_rankings, subset_inputs
from comparna.services.scoring import score_prediction
from predictors.models import Method, MethodVersion, Prediction
from tests.django.test_rankings import random_db
from tests.factories import make_dataset, make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_datasets():
    """Two datasets with a second subset each, methods whose names sort differently by case and
    punctuation, an inactive and a development method, an old version, recorded failures and families."""
    rng = random.Random(3)
    names = ("beta", "Alpha", "alpha_2", "Zeta", "_under", "Hidden", "Private")
    versions = [make_method_version(name) for name in names]
    Method.objects.filter(name="Hidden").update(active=False)
    Method.objects.filter(name="Private").update(visibility=Method.Visibility.DEVELOPMENT)
    old = MethodVersion.objects.create(
        method=versions[0].method, fingerprint="old", version="0", program="beta", spec={}, is_current=False
    )
    seq = "GCAU" * 9
    for slug in ("first", "second"):
        dataset = make_dataset(slug)
        subset = Subset.objects.create(dataset=dataset, slug="some", name="Some")
        targets = [make_target(seq, random_db(rng, 36), dataset=dataset) for _ in range(12)]
        for n, target in enumerate(targets):
            if n % 3 == 0:
                subset.targets.add(target)
            if n % 4 == 1:
                target.family, target.family_source = "tRNA", "dataset"
                target.save()
            for k, version in enumerate(versions):
                roll = rng.random()
                if roll < 0.15:
                    continue  # not predicted
                prediction = make_prediction(version, target, random_db(rng, 36))
                if roll < 0.3:
                    prediction.status = Prediction.Status.FAILED if k % 2 else Prediction.Status.TIMEOUT
                    prediction.save()
                    continue
                score_prediction(prediction=prediction)
            score_prediction(prediction=make_prediction(old, target, random_db(rng, 36)))
    return Subset.objects.order_by("dataset__slug", "slug")


def test_cached_inputs_equal_each_subsets_own_queries(two_datasets):
    cache = RankingInputs()
    for subset in two_datasets:
        own = subset_inputs(subset=subset, definition="extended")
        cached = subset_inputs(subset=subset, definition="extended", cache=cache)
        table, identity, target_ids, empty = own
        assert cached[0].methods == table.methods and cached[0].targets == table.targets
        assert np.array_equal(cached[0].counts, table.counts) and cached[0].counts.dtype == table.counts.dtype
        assert np.array_equal(cached[0].present, table.present)
        assert cached[1] == identity and list(cached[1]["methods"]) == list(identity["methods"])
        assert cached[2] == target_ids
        assert np.array_equal(cached[3], empty)
        assert empty.any() and "Hidden" not in table.methods and "Private" not in table.methods


def test_recompute_rankings_stores_what_rank_subset_stores(two_datasets):
    stored = {(s.subset_id, s.definition): s for s, _ in recompute_rankings(seed=5)}
    for subset in two_datasets:
        snapshot, new = rank_subset(subset=subset, definition="extended", seed=5)
        assert not new and snapshot.pk == stored[subset.pk, "extended"].pk
