"""Rankings say what they are: finished outcomes only in the robustness ranking, no shared first rank made of
"?", scores on common targets, not-ranked methods with reasons, provisional until settled, an ETA from
measured throughput, and per-ranking downloads. Every number is recomputed here from the stored rows."""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
import json
import math
import random
import re

import pytest
from django.core.cache import cache
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from comparna.models import Score, Subset
from comparna.rna.ranking import robustness_ranking
from comparna.services.progress import prediction_progress, ranking_state
from comparna.services.rankings import build_counts_table, rank_subset
from comparna.services.scoring import score_prediction
from predictors.models import Prediction
from tests.factories import make_dataset, make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db

FIELDS = ("tp", "fn", "fp", "fp_compatible", "tn")


def random_db(rng: random.Random, n: int) -> str:
    chars = ["."] * n
    for _ in range(n // 6):
        i = rng.randrange(0, n - 4)
        j = rng.randrange(i + 4, n)
        if chars[i] == "." and chars[j] == "." and all(c == "." for c in chars[i : j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)


def mcc(tp, fn, fp, eps, tn) -> float:
    f = fp - eps
    den = math.sqrt((tp + f) * (tp + fn) * (tn + f) * (tn + fn))
    return 0.0 if den == 0 else (tp * tn - f * fn) / den


@pytest.fixture
def world():
    """20 targets. Alpha copies the reference on its 16 scored targets (before issue 27: on the even ones
    only; 8 perfect and 8 random targets against Beta's random ones were a win only under the CompaRNA 2013
    protocol: at the target level that is p = 0.01 on 16 targets, an under-powered "?"), failed on 16, too
    long on 17, queued on 18-19;
    Beta predicts at random everywhere; Gamma scores only 6 targets and times out on the rest (only "?");
    Delta is active with every prediction queued. Finished predictions finished 1-10 minutes ago."""
    cache.clear()
    rng = random.Random(3)
    seq = "GCAU" * 10
    versions = {name: make_method_version(name) for name in ("Alpha", "Beta", "Gamma", "Delta")}
    targets = [make_target(seq, random_db(rng, 40)) for _ in range(20)]
    now = timezone.now()
    minute = 0

    def finish(p: Prediction) -> None:
        nonlocal minute
        minute = minute % 9 + 1
        p.finished_at = now - dt.timedelta(minutes=minute)
        p.started_at = p.finished_at - dt.timedelta(seconds=2)
        p.runtime_s = 2.0
        p.save()

    def outcome(version, target, status):
        p = Prediction.objects.create(method_version=version, target=target, status=status)
        if status not in (Prediction.Status.QUEUED,):
            finish(p)

    for n, t in enumerate(targets):
        ref = t.references.get().pairs
        if n < 16:
            p = make_prediction(versions["Alpha"], t, random_db(rng, 40))
            p.pairs = ref
            finish(p)
            score_prediction(prediction=p)
        else:
            status = {16: "failed", 17: "too_long"}.get(n, Prediction.Status.QUEUED)
            outcome(versions["Alpha"], t, status)
        p = make_prediction(versions["Beta"], t, random_db(rng, 40))
        finish(p)
        score_prediction(prediction=p)
        if n < 6:
            p = make_prediction(versions["Gamma"], t, random_db(rng, 40))
            finish(p)
            score_prediction(prediction=p)
        else:
            outcome(versions["Gamma"], t, Prediction.Status.TIMEOUT)
        outcome(versions["Delta"], t, Prediction.Status.QUEUED)
    few = Subset.objects.create(dataset=targets[0].dataset, slug="few", name="Six targets", order=1)
    few.targets.add(*targets[:6])
    return {
        "targets": targets,
        "versions": versions,
        "now": now,
        "few": few,
        "all": Subset.objects.get(slug="all"),
    }


def scores(name: str, target_ids=None):
    qs = Score.objects.filter(prediction__method_version__method__name=name, definition="extended")
    return qs if target_ids is None else qs.filter(prediction__target_id__in=target_ids)


def test_robustness_counts_only_finished_outcomes_as_empty(world):
    snap, _ = rank_subset(subset=world["all"], definition="extended", seed=5)
    report = snap.report
    # targets 0-17: every method in the table (Alpha, Beta, Gamma) has a scored or failed outcome there;
    # Alpha's queued 18-19 are left out, not counted as empty structures
    finished_all = [t.pk for t in world["targets"][:18]]
    assert report["robustness_targets"] == 18
    rob = {r["method"]: r for r in report["robustness"]}
    assert rob["Alpha"]["targets"] == 16 and rob["Gamma"]["targets"] == 6 and rob["Beta"]["targets"] == 18
    for name in ("Alpha", "Beta", "Gamma"):
        # independent: the method's counts where scored, an empty structure (FN = reference pairs,
        # TN = candidates - FN) where it failed
        totals = dict.fromkeys(FIELDS, 0)
        scored = {s.prediction.target_id: s for s in scores(name, finished_all).select_related("prediction")}
        for t in world["targets"][:18]:
            if t.pk in scored:
                for f in FIELDS:
                    totals[f] += getattr(scored[t.pk], f)
            else:
                ref = t.references.get().n_pairs
                totals["fn"] += ref
                totals["tn"] += t.length * (t.length - 1) // 2 - ref
        assert rob[name]["mcc"] == pytest.approx(mcc(*(totals[f] for f in FIELDS)), abs=1e-12)
    # counting Alpha's two queued targets as empty (the old behaviour) would give another MCC
    old = robustness_ranking(build_counts_table(subset=world["all"], definition="extended")[0])
    assert old.coverage[old.methods.index("Alpha")] == 16
    assert old.mcc[old.methods.index("Alpha")] != pytest.approx(rob["Alpha"]["mcc"], abs=1e-6)
    assert "Delta" not in rob


def test_only_question_marks_are_not_ranked_and_never_a_shared_first_rank(client, world):
    snap, _ = rank_subset(subset=world["all"], definition="extended", seed=5)
    methods = {m["method"]: m for m in snap.report["methods"]}
    assert methods["Gamma"]["unknown"] == 2  # "?" against Alpha and Beta
    assert snap.report["ranked_methods"] == ["Alpha", "Beta"]
    api = client.get(f"/api/rankings/{snap.pk}/").json()
    assert {m["method"]: m["ranked"] for m in api["methods"]} == {"Alpha": True, "Beta": True, "Gamma": False}
    page = client.get(reverse("subset-rankings", args=["testset", "all", "extended"])).content.decode()
    table = page[page.index('id="ranking-table"') : page.index("</table>", page.index('id="ranking-table"'))]
    assert 'data-method="Gamma"' not in table and 'data-method="Alpha"' in table
    listed = page[page.index('id="not-ranked-list"') :]
    listed = html.unescape(listed[: listed.index("</ul>")])
    assert re.search(
        r'data-method="Gamma">.*too few common targets: at most 6 with another method, 10 needed', listed
    )
    assert re.search(r'data-method="Delta">.*no prediction finished yet \(20 queued or running\)', listed)
    # a subset of six targets: every verdict is "?", so nobody is ranked (no table of rank-1 ties)
    few, _ = rank_subset(subset=world["few"], definition="extended", seed=5)
    assert all(m["rank"] == 1 for m in few.report["methods"])  # the engine's ranks: all share 1 ...
    assert few.report["ranked_methods"] == []
    page = client.get(reverse("subset-rankings", args=["testset", "few", "extended"])).content.decode()
    table = page[page.index('id="ranking-table"') : page.index("</table>", page.index('id="ranking-table"'))]
    assert "No ranked method in this selection." in table and '<td class="num" data-value="1"' not in table
    assert page.count("too few common targets") == 3  # ... but the page ranks nobody and says why


def test_pooled_scores_are_on_the_common_targets_of_the_ranked_methods(client, world):
    snap, _ = rank_subset(subset=world["all"], definition="extended", seed=5)
    common = set(scores("Alpha").values_list("prediction__target_id", flat=True)) & set(
        scores("Beta").values_list("prediction__target_id", flat=True)
    )
    assert snap.report["common_targets_ranked"] == len(common) == 16
    for name in ("Alpha", "Beta"):
        agg = scores(name, common).aggregate(*(Sum(f) for f in FIELDS))
        expected = mcc(*(agg[f"{f}__sum"] for f in FIELDS))
        assert snap.report["common_scores"][name]["mcc"] == pytest.approx(expected, abs=1e-12)
    # Beta's own-target MCC (20 targets) differs from its common-target one: like is compared with like
    assert snap.report["common_scores"]["Beta"]["mcc"] != pytest.approx(
        next(m["mcc"] for m in snap.report["methods"] if m["method"] == "Beta"), abs=1e-9
    )
    page = client.get(reverse("subset-rankings", args=["testset", "all", "extended"])).content.decode()
    assert re.search(r'id="common-targets">16<', page)
    # downloads: CSV and JSON carry the same rows
    base = reverse("ranking-download", args=["testset", "all", "extended", "csv"])
    rows = list(csv.DictReader(io.StringIO(client.get(base + f"?snapshot={snap.pk}").content.decode())))
    assert [(r["method"], r["rank"], r["ranked"]) for r in rows][:2] == [
        (m["method"], str(m["rank"]), "True")
        for m in snap.report["methods"]
        if m["method"] in ("Alpha", "Beta")
    ]
    gamma = next(r for r in rows if r["method"] == "Gamma")
    assert gamma["rank"] == "" and gamma["ranked"] == "False" and gamma["targets_scored"] == "6"
    data = json.loads(
        client.get(reverse("ranking-download", args=["testset", "all", "extended", "json"])).content
    )
    assert data["snapshot"] == snap.pk and data["common_targets"] == 16
    assert data["methods"][0]["mcc_common"] == pytest.approx(
        snap.report["common_scores"][data["methods"][0]["method"]]["mcc"]
    )
    assert (
        client.get(reverse("ranking-download", args=["testset", "all", "extended", "xml"])).status_code == 404
    )
    # the method picker goes to the comparison of the two chosen methods in this snapshot
    a, b = world["versions"]["Alpha"].method, world["versions"]["Beta"].method
    pick = client.get(
        reverse("method-comparison-pick", args=["testset", "all", "extended"])
        + f"?a={b.pk}&b={a.pk}&snapshot={snap.pk}"
    )
    assert pick.status_code == 302
    assert (
        pick["Location"]
        == reverse("method-comparison", args=["testset", "all", "extended", b.pk, a.pk])
        + f"?snapshot={snap.pk}"
    )


def test_progress_eta_from_measured_throughput_and_settling(client, world):
    now = world["now"]
    prog = prediction_progress(subset=world["all"], now=now)
    finished = Prediction.objects.exclude(status="queued")
    queued = Prediction.objects.filter(status="queued")
    assert (prog["finished"], prog["pending"]) == (finished.count(), queued.count()) == (58, 22)
    # every finished prediction finished 1-9 min ago, the first started 9 min 2 s ago: that is the span;
    # Alpha's "too long" (recorded without running anything) is not throughput
    ran = finished.exclude(status="too_long")
    first = min(p.started_at for p in ran)
    span = (now - first).total_seconds() / 60
    assert prog["recent"] == 57 and prog["measured_minutes"] == pytest.approx(span)
    assert prog["rate_per_min"] == pytest.approx(57 / span)
    # the ETA is the workers' schedule (every queued prediction at rank 0): Alpha's 2 queued jobs of 2 s at
    # 57 jobs of 2 s run in the span; Delta, with nothing finished, cannot be costed: "at least", named
    assert prog["eta"]["minutes"] == pytest.approx(2 * 2.0 / (57 * 2.0 / span))
    assert prog["eta"]["lower_bound"] and prog["eta_sentence"].startswith("ETA: at least ")
    assert prog["unestimated"] == ["Delta"] and "Not counted yet: the work of Delta" in prog["eta_sentence"]
    per = {m["method"]: m for m in prog["methods"]}
    # nothing of Delta finished: no estimate rather than a made-up one
    assert per["Delta"]["eta"] is None and per["Delta"]["pending"] == 20
    # one measuring time for every method (issue 27: a span per method made every method that had just
    # started show the same rate): per-method rates differ as their counts do and add up to the total
    assert (per["Alpha"]["recent"], per["Beta"]["recent"], per["Gamma"]["recent"]) == (17, 20, 20)
    assert per["Alpha"]["rate_per_min"] == pytest.approx(17 / span)
    assert per["Beta"]["rate_per_min"] == pytest.approx(20 / span) != per["Alpha"]["rate_per_min"]
    assert sum(m["rate_per_min"] or 0 for m in per.values()) == pytest.approx(prog["rate_per_min"])
    assert per["Alpha"]["eta"]["minutes"] == pytest.approx(prog["eta"]["minutes"])  # its last job is the last
    # an owner's estimate is the method's own rate since its own first run in the window (its lane is its
    # own): Alpha's 2 queued at its 17 finished (all 40 nt: length weighs the same)
    from comparna.owners.eta import queue_eta

    owner = queue_eta(world["versions"]["Alpha"], now=now)
    own_span = (now - min(p.started_at for p in ran.filter(method_version=world["versions"]["Alpha"])))
    own_span = own_span.total_seconds() / 60
    assert owner["rate"]["per_minute"] == pytest.approx(17 / own_span)
    assert owner["minutes"] == pytest.approx(2 / (17 / own_span))
    # nothing finished in the window: no estimate rather than a made-up one
    later = prediction_progress(subset=world["all"], now=now + dt.timedelta(hours=1))
    assert later["eta"] is None and later["pending"] == 22
    # provisional while anything of an active method is unfinished ...
    snap, _ = rank_subset(subset=world["all"], definition="extended", seed=5)
    state = ranking_state(snap)
    assert not state["settled"] and "22 predictions of active methods still unfinished" in state["reasons"]
    page = client.get(reverse("subset-rankings", args=["testset", "all", "extended"])).content.decode()
    assert 'data-state="provisional"' in page and "Provisional" in page and 'id="ranking-eta"' in page
    # ... and while the snapshot misses scores that arrived since
    for p in queued:
        p.status = Prediction.Status.TIMEOUT
        p.finished_at = timezone.now()
        p.save()
    assert ranking_state(snap)["reasons"] == [
        "scores changed since this snapshot was computed (the next recomputation updates it)"
    ]
    snap, new = rank_subset(subset=world["all"], definition="extended", seed=5)
    assert new and ranking_state(snap)["settled"]
    cache.clear()
    page = client.get(reverse("subset-rankings", args=["testset", "all", "extended"])).content.decode()
    assert 'data-state="settled"' in page


def test_target_level_page_rank_interval_decided_mcc_and_the_labelled_2013_view(client, world):
    """Issue 27: the ranking page shows the target-level verdict with rank intervals and the MCC on the
    targets that decided the order (with n); ?protocol=2013 shows the CompaRNA 2013 protocol, labelled as
    such; the method page shows the same MCC for the same snapshot; every download says whether it is
    settled."""
    snap, _ = rank_subset(subset=world["all"], definition="extended", seed=5)
    rows = {m["method"]: m for m in snap.report["methods"]}
    alpha = rows["Alpha"]
    assert alpha["wins"] == 1 and alpha["decided_targets"] == 16 and alpha["rank_low"] == 1
    url = reverse("subset-rankings", args=["testset", "all", "extended"])
    page = client.get(url).content.decode()
    assert 'data-protocol="target"' in page and "Holm-adjusted" in page
    row = page[page.index('data-method="Alpha"') :]
    row = row[: row.index("</tr>")]
    assert "[1]" in row  # the rank's 95 % interval
    cell = re.search(r'class="num decided-mcc" data-value="([^"]+)" data-n="(\d+)"', row)
    assert float(cell.group(1)) == pytest.approx(alpha["decided_mcc"]) and cell.group(2) == "16"
    old = client.get(url + "?protocol=2013").content.decode()
    assert 'data-protocol="2013"' in old and 'id="protocol-2013-note"' in old
    assert "not with the evidence" in old
    # the method page: the same number, the same n, and the state of the snapshot
    method = world["versions"]["Alpha"].method
    mpage = client.get(reverse("method-detail", args=[method.pk])).content.decode()
    mrow = mpage[mpage.index(f'data-snapshot="{snap.pk}"') :]
    mrow = mrow[: mrow.index("</tr>")]
    value = float(re.search(r'class="num method-mcc" data-value="([^"]+)"', mrow).group(1))
    assert value == pytest.approx(float(cell.group(1)))
    assert 'data-state="provisional"' in mpage[mpage.index('id="method-rankings"') :]  # Delta is queued
    assert 'id="method-provisional"' in mpage
    # downloads and their protocol
    base = reverse("ranking-download", args=["testset", "all", "extended", "json"])
    data = json.loads(client.get(base + f"?snapshot={snap.pk}").content)
    assert data["settled"] is False and data["state"] == "provisional"
    assert data["settled_definition_url"] == reverse("about") + "#provisional"
    assert data["protocol"] == "target" and data["clusters"] == 20
    first = data["methods"][0]
    assert first["decided_mcc"] == pytest.approx(rows[first["method"]]["decided_mcc"])
    data_2013 = json.loads(client.get(base + f"?snapshot={snap.pk}&protocol=2013").content)
    assert data_2013["protocol"] == "2013" and data_2013["protocol_label"] == "CompaRNA 2013 protocol"
    assert data_2013["verdicts"] == snap.report["protocol_2013"]["verdicts"]
    csv_url = reverse("ranking-download", args=["testset", "all", "extended", "csv"])
    table = list(csv.DictReader(io.StringIO(client.get(csv_url + f"?snapshot={snap.pk}").content.decode())))
    assert {r["settled"] for r in table} == {"False"} and {r["protocol"] for r in table} == {"target"}
    matrix = client.get(reverse("ranking-matrix", args=["testset", "all", "extended"])).content.decode()
    assert 'id="provisional-banner" data-state="provisional"' in matrix and "Holm-adjusted" in matrix


def test_an_under_powered_pair_is_not_ranked_and_says_why(client):
    """12 common targets, A far better on 7 and far worse on 5: no verdict at the target level ("?", open:
    neither a win nor an equivalence; issue 35: was "power"), so neither is ranked, and the page says it is
    the evidence, not the count, that is missing."""
    cache.clear()
    rng = random.Random(12)
    dataset = make_dataset("powerless")
    a, b = make_method_version("Up"), make_method_version("Down")
    for k in range(12):
        db = random_db(rng, 40)
        target = make_target("GCAU" * 10, db, dataset=dataset)
        ref = target.references.get().pairs
        pa = make_prediction(a, target, random_db(rng, 40))
        pb = make_prediction(b, target, random_db(rng, 40))
        perfect = pa if k < 7 else pb  # Up is perfect on 7 targets, Down on the other 5
        perfect.pairs = ref
        perfect.save()
        for p in (pa, pb):
            score_prediction(prediction=p)
    snap, _ = rank_subset(subset=Subset.objects.get(dataset=dataset, slug="all"), definition="extended")
    assert snap.report["verdicts"]["Up"]["Down"] == "?"
    assert snap.report["verdict_reasons"]["Up"]["Down"] == "open"
    assert snap.report["to_decide"]["Up"]["Down"][0] > 0
    assert snap.report["ranked_methods"] == []
    page = client.get(reverse("subset-rankings", args=["powerless", "all", "extended"])).content.decode()
    listed = html.unescape(page[page.index('id="not-ranked-list"') :])
    assert "no verdict yet: at most 12 common targets in 12 families" in listed
    assert "too few common targets" not in listed
