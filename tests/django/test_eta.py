"""One ETA (issue 37, item 2): one estimator over one stated window, one sentence, consistent by
construction — a subset's ETA is at least each of its methods' and at most its dataset's, the site's is the
slowest dataset's — and public figures count public methods only.

The estimator is the workers' schedule (:mod:`comparna.services.backlog`): a scope is done when the workers
reach its last queued prediction, after everything queued before it. Before (each method's queue at its own
rate on the dataset), ``make run``'s RNA STRAND ETA was five times too short once the workers' turn went to
the other datasets, and short targets run first made every estimate too short for the long ones after them.
"""

from __future__ import annotations

import datetime as dt
import html
import random

import pytest
from django.core.cache import cache
from django.utils import timezone

from comparna.models import Subset
from comparna.services import backlog, progress, tallies
from predictors.models import Method, MethodVersion, Prediction
from tests.factories import make_dataset, make_method_version, make_target

pytestmark = pytest.mark.django_db

COMPLEXITY = {"Alpha": "n3", "Beta": "n2", "Gamma": "n3", "Dev": "n3"}
EXPONENT = {"n2": 2, "n3": 3}


@pytest.fixture
def busy():
    """Two datasets of targets of 32–480 nt; public methods of different speeds and complexities that
    finished some predictions in the window (with their runtimes) and have others queued at schedule ranks
    that interleave the datasets (the scheduler's turns); a subset of the first dataset; Gamma never finished
    anything; a development method with a long, early queue (it must change no public figure)."""
    cache.clear()
    rng = random.Random(37)
    now = timezone.now()
    datasets = [make_dataset("first"), make_dataset("second")]
    targets: dict[str, list] = {}
    for ds in datasets:
        targets[ds.slug] = []
        for _ in range(60):
            n = 4 * rng.randint(8, 120)
            targets[ds.slug].append(make_target("GCAU" * (n // 4), "." * n, dataset=ds))
    subset = Subset.objects.create(dataset=datasets[0], slug="part", name="Part", order=1)
    subset.targets.add(*rng.sample(targets["first"], 25))
    versions = {name: make_method_version(name) for name in COMPLEXITY}
    for name, complexity in COMPLEXITY.items():
        v = versions[name]
        MethodVersion.objects.filter(pk=v.pk).update(spec={**v.spec, "complexity": complexity})
    Method.objects.filter(name="Dev").update(visibility=Method.Visibility.DEVELOPMENT)
    seconds_per_unit = {"Alpha": 0.2, "Beta": 1.5, "Gamma": 0.4, "Dev": 0.1}
    # (finished in the window, queued) per dataset and method; "second" is queued after "first" mostly
    plan = {
        ("first", "Alpha"): (30, 20), ("first", "Beta"): (6, 40), ("first", "Gamma"): (0, 8),
        ("first", "Dev"): (50, 10),
        ("second", "Alpha"): (10, 40), ("second", "Beta"): (0, 30), ("second", "Gamma"): (0, 5),
        ("second", "Dev"): (10, 50),
    }
    offset = {"first": 0, "second": 3}
    rows = []
    for (slug, name), (done, queued) in plan.items():
        ts = rng.sample(targets[slug], done + queued)
        k = EXPONENT[COMPLEXITY[name]]
        for t in ts[:done]:
            finished = now - dt.timedelta(minutes=rng.uniform(0.5, 14))
            runtime = seconds_per_unit[name] * backlog.units(t.length, k) * rng.uniform(0.8, 1.2)
            rows.append(Prediction(method_version=versions[name], target=t, status=Prediction.Status.OK,
                                   started_at=finished - dt.timedelta(seconds=runtime), finished_at=finished,
                                   runtime_s=runtime, schedule_rank=rng.randint(0, 2)))
        for i, t in enumerate(ts[done:]):
            rank = -5 if name == "Dev" else offset[slug] + i // 4
            rows.append(Prediction(method_version=versions[name], target=t, schedule_rank=rank))
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


def expected_minutes(world, last_rank: int, span: float) -> float:
    """The estimator's formula, from the prediction rows: every public queued prediction up to
    ``last_rank`` at its version's measured seconds per unit (Gamma's are unmeasured: not counted), over
    the seconds run per minute of the window."""
    now, since = world["now"], world["now"] - dt.timedelta(minutes=span)
    public = Prediction.objects.exclude(method_version__method__name="Dev").select_related("target")
    seconds, units, inside = {}, {}, 0.0
    for p in public.filter(status=Prediction.Status.OK):
        fixed, k = model_of(p.method_version)
        seconds[p.method_version_id] = seconds.get(p.method_version_id, 0.0) + p.runtime_s
        cost = fixed + (p.target.length / 400) ** k
        units[p.method_version_id] = units.get(p.method_version_id, 0.0) + cost
        inside += min(p.runtime_s, (p.finished_at - since).total_seconds())
    work = 0.0
    for p in public.filter(status=Prediction.Status.QUEUED, schedule_rank__lte=last_rank):
        if p.method_version_id in units:
            fixed, k = model_of(p.method_version)
            scale = seconds[p.method_version_id] / units[p.method_version_id]
            limit = p.method_version.spec["time_limit_s"]  # no job runs longer
            work += min(scale * (fixed + (p.target.length / 400) ** k), limit)
    assert now >= since
    return work / (inside / span)


def model_of(version) -> tuple[float, float]:
    """The version's cost model fitted to its runs in the window (tests/unit/test_cost_model.py tests it)."""
    runs = version.predictions.filter(status=Prediction.Status.OK).values_list("target__length", "runtime_s")
    return backlog.cost_model(list(runs), EXPONENT[COMPLEXITY[version.method.name]])


def last_rank(**filters) -> int:
    queued = Prediction.objects.exclude(method_version__method__name="Dev").filter(
        status=Prediction.Status.QUEUED, **filters
    )
    return max(queued.values_list("schedule_rank", flat=True))


@pytest.mark.parametrize("counted", ["live", "tallied"])
def test_the_eta_is_the_schedules_and_consistent_by_construction(busy, counted):
    if counted == "tallied":
        tallies.refresh_tallies(now=busy["now"])
        got = scopes(busy)
    else:
        got = scopes(busy, now=busy["now"])
    spans = {p["measured_minutes"] for p in got.values()}
    assert len(spans) == 1  # one measuring time everywhere
    span = spans.pop()
    d1, d2 = busy["datasets"]
    # the formula: the work queued up to the scope's last rank, of every public method and dataset
    for name, ds in (("first", d1), ("second", d2)):
        expected = expected_minutes(busy, last_rank(target__dataset=ds), span)
        assert minutes(got[name]) == pytest.approx(expected)
    part = last_rank(target__subsets=busy["subset"])
    assert minutes(got["part"]) == pytest.approx(expected_minutes(busy, part, span))
    beta = {m["method"]: m for m in got["part"]["methods"]}["Beta"]
    beta_last = last_rank(target__subsets=busy["subset"], method_version__method__name="Beta")
    assert beta["eta"]["minutes"] == pytest.approx(expected_minutes(busy, beta_last, span))
    # "first" is queued before "second": its ETA counts "second"'s work before its last rank, not only its own
    alone = expected_minutes(busy, -1, span)  # nothing queued at a negative rank but Dev's
    assert alone == 0.0 and minutes(got["first"]) < minutes(got["second"])
    # consistent by construction
    for name in ("part", "all-first"):
        sub = got[name]
        assert all(minutes(sub) >= m["eta"]["minutes"] - 1e-9 for m in sub["methods"] if m["eta"])
        assert minutes(sub) <= minutes(got["first"]) + 1e-9
    assert minutes(got["all-first"]) == pytest.approx(minutes(got["first"]))
    slowest = max(("first", "second"), key=lambda s: minutes(got[s]))
    assert minutes(got["site"]) == pytest.approx(minutes(got[slowest]))
    assert got["site"]["eta"]["dataset"] == slowest
    for m in got["site"]["methods"]:  # a method's site ETA: its slowest dataset's
        per_dataset = [x["eta"]["minutes"] for s in ("first", "second") for x in got[s]["methods"]
                       if x["method"] == m["method"] and x["eta"] and x["queued"]]
        if m["eta"] and per_dataset:
            assert m["eta"]["minutes"] == pytest.approx(max(per_dataset))
    # Gamma finished nothing: its work is not counted, the ETA says "at least" and names it
    for p in got.values():
        assert p["unestimated"] == ["Gamma"] and p["eta"]["lower_bound"]
        assert p["eta_sentence"].startswith(f"ETA: at least {p['eta']['text']} (≈ ")
        assert "Not counted yet: the work of Gamma" in p["eta_sentence"]
    assert "both measured over the last 15 min" in got["site"]["eta_sentence"]
    assert ", on second:" in got["site"]["eta_sentence"]


def test_a_long_target_costs_what_its_length_says(busy):
    """A long queued target costs what the method's cost model, fitted to its runs, says of its length, not
    the method's mean runtime so far."""
    now = busy["now"]
    before = progress.prediction_progress(dataset=busy["datasets"][1], now=now)
    beta = busy["versions"]["Beta"]
    long_one = make_target("GCAU" * 300, "." * 1200, dataset=busy["datasets"][1])
    Prediction.objects.create(method_version=beta, target=long_one, schedule_rank=0)
    after = progress.prediction_progress(dataset=busy["datasets"][1], now=now)
    rows = Prediction.objects.filter(method_version=beta, status=Prediction.Status.OK)
    rows = rows.select_related("target")
    fixed, k = model_of(beta)  # fitted to its 6 runs of 32-480 nt
    scale = sum(p.runtime_s for p in rows) / sum(fixed + (p.target.length / 400) ** k for p in rows)
    added = scale * (fixed + (1200 / 400) ** k) / after["throughput"]
    assert after["eta"]["minutes"] - before["eta"]["minutes"] == pytest.approx(added)
    short = scale * (fixed + (32 / 400) ** k) / after["throughput"]
    assert added > 2 * short  # more than twice a 32-nt job


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
    # Dev's queue is first in the order (rank -5) yet is not in the public ETA (it has its own share)
    span = public["measured_minutes"]
    assert minutes(public) == pytest.approx(expected_minutes(busy, last_rank(), span))
    # the owner's view (what the workers run) has it, with its own estimate at its own rate
    dev = next(m for m in owner["methods"] if m["method"] == "Dev")
    assert dev["queued"] == 60 and dev["eta"] is not None
    s = owner["measured_minutes"]  # its slowest dataset: 50 queued on "second" where it finished 10
    assert dev["eta"]["minutes"] == pytest.approx(max(10 / (50 / s), 50 / (10 / s)))
    assert owner["workers_left"] == public["workers_left"] + 60


def test_no_throughput_no_estimate(busy):
    long_ago = busy["now"] - dt.timedelta(hours=2)
    Prediction.objects.filter(status=Prediction.Status.OK).update(finished_at=long_ago)
    site = progress.prediction_progress(now=busy["now"])
    assert site["eta"] is None and site["throughput"] is None
    assert site["eta_sentence"].startswith(
        "ETA: no estimate — no public prediction finished in the last 15 min"
    )


def test_the_home_page_says_the_sentence_and_about_states_the_window(client, busy):
    tallies.refresh_tallies()
    site = progress.prediction_progress()
    assert site["eta_sentence"].startswith("ETA: at least ")
    assert site["eta_sentence"] in html.unescape(client.get("/").content.decode())
    about = " ".join(html.unescape(client.get("/about/").content.decode()).split())
    assert f"over the last {progress.WINDOW_MINUTES} minutes" in about
    assert "the last prediction queued" in about
    assert f"first {progress.MIN_MEASURING_MINUTES} minutes no ETA is given" in about
    assert progress.WINDOW_MINUTES == tallies.WINDOW_MINUTES  # the window the counts use


def test_no_public_estimate_before_five_minutes_of_runs(busy):
    """The workers' first minutes (start-up) make their throughput look a third of what it becomes: no
    estimate is given until the measuring time reaches MIN_MEASURING_MINUTES, and the page says so."""
    now = busy["now"]
    Prediction.objects.filter(status=Prediction.Status.OK).update(
        started_at=now - dt.timedelta(minutes=3), finished_at=now - dt.timedelta(minutes=1)
    )
    site = progress.prediction_progress(now=now)
    assert site["measured_minutes"] == pytest.approx(3) and site["measuring"] and site["eta"] is None
    assert all(m["eta"] is None for m in site["methods"] if m["queued"])
    assert site["eta_sentence"] == (
        "ETA: measuring — the workers have run for 3 min; an estimate needs 5 min of their runs."
    )
    later = progress.prediction_progress(now=now + dt.timedelta(minutes=2))  # 5 min of runs
    assert not later["measuring"] and later["eta"]["minutes"] > 0
