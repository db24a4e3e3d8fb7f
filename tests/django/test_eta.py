"""One ETA (issue 37, item 2): one rate estimator per public method and dataset over one stated window, one
sentence, consistent by construction — a subset's ETA is at least each of its methods' and at most its
dataset's, the site's is the slowest dataset's — and public figures count public methods only.

Before: the site said 3 h 48 while ArchiveII alone said 4 h 04, a subset "about 50 min" while its own
per-method table said up to 1 h 28, and development methods' queues were in the public progress.
"""

from __future__ import annotations

import datetime as dt
import html
import random

import pytest
from django.core.cache import cache
from django.utils import timezone

from comparna.models import Subset
from comparna.services import progress, tallies
from predictors.models import Method, Prediction
from tests.factories import make_dataset, make_method_version, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy():
    """Two datasets; public methods with different rates and queues on each, a subset of the first; a
    development method with a long queue and a high rate (it must change no public figure)."""
    cache.clear()
    rng = random.Random(37)
    now = timezone.now()
    datasets = [make_dataset("first"), make_dataset("second")]
    targets = {ds.slug: [make_target("GCAU" * 8, "." * 32, dataset=ds) for _ in range(60)] for ds in datasets}
    subset = Subset.objects.create(dataset=datasets[0], slug="part", name="Part", order=1)
    subset.targets.add(*rng.sample(targets["first"], 25))
    versions = {name: make_method_version(name) for name in ("Alpha", "Beta", "Gamma", "Dev")}
    Method.objects.filter(name="Dev").update(visibility=Method.Visibility.DEVELOPMENT)
    # finished in the window, queued: per dataset and method (Gamma never finished on "second")
    plan = {
        ("first", "Alpha"): (30, 20), ("first", "Beta"): (6, 40), ("first", "Gamma"): (12, 8),
        ("first", "Dev"): (50, 10),
        ("second", "Alpha"): (10, 40), ("second", "Beta"): (25, 30), ("second", "Gamma"): (0, 5),
        ("second", "Dev"): (40, 20),
    }
    rows = []
    for (slug, name), (done, queued) in plan.items():
        ts = rng.sample(targets[slug], done + queued)
        for t in ts[:done]:
            finished = now - dt.timedelta(minutes=rng.uniform(0.5, 14))
            rows.append(Prediction(method_version=versions[name], target=t, status=Prediction.Status.OK,
                                   started_at=finished - dt.timedelta(seconds=5), finished_at=finished))
        for t in ts[done:]:
            rows.append(Prediction(method_version=versions[name], target=t))
    Prediction.objects.bulk_create(rows)
    return {"now": now, "datasets": datasets, "subset": subset, "versions": versions, "plan": plan}


def scopes(world, **kw) -> dict:
    d1, d2 = world["datasets"]
    return {
        "site": progress.prediction_progress(**kw),
        "first": progress.prediction_progress(dataset=d1, **kw),
        "second": progress.prediction_progress(dataset=d2, **kw),
        "part": progress.prediction_progress(subset=world["subset"], **kw),
        "all-first": progress.prediction_progress(subset=d1.subsets.get(slug="all"), **kw),
    }


def minutes(p: dict) -> float:
    return p["eta"]["minutes"]


@pytest.mark.parametrize("counted", ["live", "tallied"])
def test_etas_are_consistent_by_construction(busy, counted):
    if counted == "tallied":
        tallies.refresh_tallies(now=busy["now"])
        got = scopes(busy)
    else:
        got = scopes(busy, now=busy["now"])
    # one measuring time everywhere (the workers' first start in the window, else the window)
    spans = {p["measured_minutes"] for p in got.values()}
    assert len(spans) == 1
    span = spans.pop()
    # a method's ETA on a dataset: its queue there at its own rate there
    first = {m["method"]: m for m in got["first"]["methods"]}
    done, queued = busy["plan"][("first", "Beta")]
    assert first["Beta"]["eta"]["minutes"] == pytest.approx(queued / (done / span))
    # Gamma finished nothing on "second": no estimate there, and it is named rather than guessed
    second = {m["method"]: m for m in got["second"]["methods"]}
    assert second["Gamma"]["eta"] is None and got["second"]["unestimated"] == ["Gamma"]
    assert "No estimate yet for Gamma" in got["second"]["eta_sentence"]
    # subsets: at least each of their methods', at most their dataset's
    for name in ("part", "all-first"):
        sub = got[name]
        assert all(minutes(sub) >= m["eta"]["minutes"] - 1e-9 for m in sub["methods"] if m["eta"])
        assert minutes(sub) <= minutes(got["first"]) + 1e-9
        assert minutes(sub) == pytest.approx(max(m["eta"]["minutes"] for m in sub["methods"] if m["eta"]))
    assert minutes(got["all-first"]) == pytest.approx(minutes(got["first"]))
    # the site: the slowest dataset, named with its slowest method
    slowest = max(("first", "second"), key=lambda s: minutes(got[s]))
    assert minutes(got["site"]) == pytest.approx(minutes(got[slowest]))
    assert got["site"]["eta"]["method"] == got[slowest]["eta"]["method"]
    assert got["site"]["eta"]["dataset"] == slowest
    # one sentence: the same words wherever the same ETA is shown
    assert got["site"]["eta_sentence"].startswith(f"ETA: about {got['site']['eta']['text']} (≈ ")
    assert f"the slowest method here, {got['site']['eta']['method']}," in got["site"]["eta_sentence"]
    assert "over the last 15 min" in got["site"]["eta_sentence"]


@pytest.mark.parametrize("counted", ["live", "tallied"])
def test_public_figures_count_public_methods_only(busy, counted):
    if counted == "tallied":
        tallies.refresh_tallies(now=busy["now"])
        public = progress.prediction_progress()
        owner = progress.prediction_progress(include_private=True)
    else:
        public = progress.prediction_progress(now=busy["now"])
        owner = progress.prediction_progress(now=busy["now"], include_private=True)
    plan = busy["plan"]
    expected = {k: v for k, v in plan.items() if k[1] != "Dev"}
    assert public["total"] == sum(d + q for d, q in expected.values())
    assert public["workers_left"] == public["pending"] == sum(q for _, q in expected.values())
    assert public["recent"] == sum(d for d, _ in expected.values())
    assert "Dev" not in {m["method"] for m in public["methods"]}
    # the owner's view (what the workers run) has it, with its own estimate
    dev = next(m for m in owner["methods"] if m["method"] == "Dev")
    assert dev["queued"] == 30 and dev["eta"] is not None
    assert owner["workers_left"] == public["workers_left"] + 30


def test_the_home_page_says_the_sentence_and_about_states_the_window(client, busy):
    tallies.refresh_tallies()
    site = progress.prediction_progress()
    assert site["eta_sentence"].startswith("ETA: about ")
    assert site["eta_sentence"] in html.unescape(client.get("/").content.decode())
    about = " ".join(html.unescape(client.get("/about/").content.decode()).split())
    assert f"finished in the last {progress.WINDOW_MINUTES} minutes" in about
    assert progress.WINDOW_MINUTES == tallies.WINDOW_MINUTES  # the window the counts use
