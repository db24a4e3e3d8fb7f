"""The "Submit a method" page and what it promises (issue 16 item 6): reachable from the home page and the
navigation; its lists of placeholders, wrappers and programs are those the runner really has; every example
is a specification the registration form accepts; a program the sandbox lacks is refused before any test run;
the test run is scored against a known reference; saving says what was queued and when it should be done."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import RNA
from django.conf import settings
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from comparna.models import Target
from comparna.owners.eta import queue_eta
from comparna.owners.forms import OwnerMethodForm
from comparna.owners.models import OwnerProfile
from comparna.owners.submit import examples
from comparna.rna.formats import parse_dot_bracket
from comparna.rna.metrics import count_pairs
from ingest.models import ComparativeInput
from predictors import sandbox_help
from predictors.catalogue import CATALOGUE
from predictors.core.spec import PLACEHOLDERS
from predictors.core.venvs import venvs_dir
from predictors.forms import TEST_SEQUENCE
from predictors.models import Method, Prediction, TrialRun
from predictors.services import execute_prediction
from predictors.trials import execute_test_run
from tests.factories import make_dataset, make_method_version, make_target

pytestmark = [pytest.mark.django_db]

TRNA_REFERENCE = "(((((((..((((........)))).(((((.......))))).....(((((.......))))))))))))...."
MFE_ARGV = '["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"]'


@pytest.fixture
def trna():
    ds = make_dataset("strand")
    make_target("GGGGAAAACCCC", "((((....))))", dataset=ds)
    target = make_target(TEST_SEQUENCE, TRNA_REFERENCE, dataset=ds)
    target.rna_class = "tRNA"
    target.save(update_fields=["rna_class"])
    return target


def _variant(seq: str, changes: dict[int, str]) -> str:
    chars = list(seq)
    for i, c in changes.items():
        chars[i] = c
    return "".join(chars)


@pytest.fixture
def trna_alignment(trna):
    """A stored (seed) input of the tRNA: its query row named as the family pipeline names it."""
    homologs = (
        _variant(TEST_SEQUENCE, {2: "C", 68: "G", 15: "A"}),
        _variant(TEST_SEQUENCE, {6: "A", 19: "U"}),
    )
    rows = "\n".join(f"{name} {s}" for name, s in zip(("tRNA-q1", "h1", "h2"), (TEST_SEQUENCE, *homologs),
                                                       strict=True))
    ComparativeInput.objects.create(
        target=trna, kind="seed", rfam_version="test", accession="RF00005", query_name="tRNA-q1",
        sequences="", alignment=f"# STOCKHOLM 1.0\n\n{rows}\n//\n",
    )
    return trna


@pytest.fixture
def owner(client):
    user = User.objects.create_user("olga", "olga@lab.example", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    client.force_login(user)
    return user


def form_data(**kw) -> dict:
    data = {
        "name": "OlgaFold",
        "kind": "command",
        "program": "olgafold",
        "version": "1",
        "input": "single",
        "output_format": "dot-bracket",
        "argv": MFE_ARGV,
        "output_file": "",
        "endpoint": "",
        "max_concurrent": 2,
        "requests_per_minute": 60,
        "retries": 1,
        "upload_window_h": 1,
        "max_length": 1000,
        "time_limit_s": 30,
        "memory_limit_mb": 1024,
        "test_target": "",
        "test_sequence": TEST_SEQUENCE,
        "tested": "",
        "trial": "",
        "image_archive": "",
    }
    data.update(kw)
    return data


def test_the_page_is_linked_from_home_and_the_navigation_and_lists_what_the_runner_has(client):
    home = client.get(reverse("home")).content.decode()
    url = reverse("submit-method")
    assert home.count(f'href="{url}"') >= 2  # the navigation and the home page's own paragraph
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    for name in PLACEHOLDERS:  # every placeholder the runner fills, with its meaning
        assert f"<code>{{{name}}}</code>" in html, name
    used = {s.argv[2] for s in CATALOGUE if len(s.argv) > 2 and s.argv[1] == "-m"}
    assert used and all(module in html for module in used)
    assert sandbox_help.sandbox_path() in html
    # the programs list is the sandbox PATH's content, and the page gives its size
    programs = client.get(reverse("submit-programs")).content.decode().splitlines()[1:]
    assert "sh" in programs and "python3" in programs and "cmsearch" in programs
    assert f">{len(programs)} programs</a>" in html
    assert reverse("owner-signup") in html and "createsuperuser" in html
    for host_path in (str(venvs_dir()), str(Path(settings.BASE_DIR).resolve())):  # no host path shown
        assert host_path not in html, host_path


def test_every_example_is_accepted_by_the_registration_form(owner, trna_alignment):
    shown = examples()
    assert {e.spec.kind for e in shown} >= {"command", "image", "web"}
    assert any(e.spec.comparative_input for e in shown)
    for ex in shown:
        data = {**OwnerMethodForm.initial_from_spec(ex.spec), "test_sequence": TEST_SEQUENCE}
        data["pseudoknots"] = data["pseudoknots"] or ""
        data["produces_probabilities"] = data["produces_probabilities"] or ""
        form = OwnerMethodForm(data, uploads=[type("U", (), {"sha256": ex.spec.image_archive, "__str__":
                                                              lambda self: "upload"})()]
                               if ex.spec.image_archive else ())
        assert form.is_valid(), (ex.title, form.errors)
        assert form.spec == ex.spec, ex.title


def test_a_program_the_sandbox_lacks_is_refused_before_any_test_run(client, owner):
    url = reverse("owner-method-new")
    for argv, says in (
        ("NoSuchFold-42\n{fasta}", "is not installed in CompaRNA&#x27;s sandbox"),
        ("/opt/myfold/bin/fold\n{fasta}", "is not visible in the sandbox"),
        ("{venvs}/nosuchvenv/bin/python\n{fasta}", "does not exist on this server"),
    ):
        r = client.post(url, {**form_data(argv=argv), "_test": "1"})
        assert r.status_code == 400 and says in r.content.decode(), (argv, r.content.decode()[-2000:])
    assert not TrialRun.objects.exists()
    # programs that are there pass: a system program by name, an absolute /usr path, {python}
    for argv in (["sh", "-c", "echo {sequence}"], ["/usr/bin/env", "{fasta}"], ["{python}", "{fasta}"]):
        assert sandbox_help.program_problem(argv, "command") is None, argv
    assert sandbox_help.program_problem(["NoSuchFold-42"], "image") is None  # inside the owner's image


def test_the_test_run_is_scored_against_the_known_reference_then_saving_says_what_is_queued(
    client, owner, trna
):
    url = reverse("owner-method-new")
    form = client.get(url).context["form"]
    assert form["test_target"].initial == str(trna.pk)  # the tRNA is offered first
    r = client.post(url, {**form_data(test_target=str(trna.pk), test_sequence=""), "_test": "1"})
    assert r.status_code == 200, r.content.decode()[-3000:]
    trial = TrialRun.objects.get(requested_by=owner)
    assert trial.sequence == trna.sequence
    execute_test_run(trial_id=trial.pk)
    r = client.post(url, {**form_data(test_target=str(trna.pk)), "trial": str(trial.pk), "_check": "1"})
    html = r.content.decode()
    # what the benchmark would count, computed here from ViennaRNA directly and the stored reference
    predicted, _ = RNA.fold(TEST_SEQUENCE)
    counts = count_pairs(
        parse_dot_bracket(TRNA_REFERENCE, length=len(TEST_SEQUENCE)),
        parse_dot_bracket(predicted, length=len(TEST_SEQUENCE)),
    )
    score = TrialRun.objects.get(pk=trial.pk).result["score"]
    assert score["target"]["source_id"] == trna.source_id
    (row,) = score["definitions"]
    assert (row["mcc"], row["f1"], row["tp"]) == (round(counts.mcc, 3), round(counts.f1, 3), counts.tp)
    assert f'<td class="num mcc">{counts.mcc:.3f}</td>' in html and 'id="test-score"' in html
    assert TRNA_REFERENCE in html and predicted in html
    tested = r.context["form"].data["tested"]
    assert tested
    # saving: the success message says how many predictions were queued and when they should be done
    r = client.post(url, {**form_data(test_target=str(trna.pk)), "trial": str(trial.pk), "tested": tested,
                          "_save": "1"}, follow=True)
    method = Method.objects.get(name="OlgaFold")
    n = Prediction.objects.filter(method_version__method=method, status="queued").count()
    assert n == 2
    text = r.content.decode()
    assert re.search(rf"OlgaFold registered as a development method; {n} predictions queued; no estimate yet",
                     text), text[:3000]


def test_a_sequence_no_target_has_is_run_but_not_scored(client, owner, trna):
    url = reverse("owner-method-new")
    client.post(url, {**form_data(test_sequence="GGGAAACCCAAAGGGAAACCC"), "_test": "1"})
    trial = TrialRun.objects.get(requested_by=owner)
    execute_test_run(trial_id=trial.pk)
    r = client.post(url, {**form_data(test_sequence="GGGAAACCCAAAGGGAAACCC"), "trial": str(trial.pk),
                          "_check": "1"})
    assert TrialRun.objects.get(pk=trial.pk).result["score"] is None
    assert 'id="test-not-scored"' in r.content.decode()


def test_eta_from_the_methods_own_measured_rate(trna):
    """Issue 37: an owner's estimate is its own queue at its own rate, not the whole backlog at the workers'
    rate (development methods have their own share of the workers)."""
    now = timezone.now()
    busy = make_method_version("Busy")
    ds = trna.dataset
    targets = [make_target("GGGGAAAACCCC", "((((....))))", dataset=ds) for _ in range(90)]
    # 30 finished over the last 10 minutes: 3 per minute
    for k, t in enumerate(targets[:30]):
        Prediction.objects.create(
            method_version=busy, target=t, status="ok",
            started_at=now - dt.timedelta(minutes=10), finished_at=now - dt.timedelta(seconds=10 * k),
        )
    for t in targets[30:]:
        Prediction.objects.create(method_version=busy, target=t)  # 60 queued
    mine = make_method_version("Mine")
    assert queue_eta(mine, now=now)["text"] == "nothing queued"
    for t in targets[:10]:
        Prediction.objects.create(method_version=mine, target=t)
    eta = queue_eta(mine, now=now)  # nothing of its own finished yet: no estimate, not the backlog's 23 min
    assert eta["mine"] == 10 and eta["queued_total"] == 70 and eta["minutes"] is None
    assert eta["text"].startswith("no estimate yet: none of its predictions finished in the last 15 min")
    # 5 of its own finished in the window, the first started 5 min ago: 1 a minute since it started (the
    # workers' start, 10 min ago, would halve its rate: it ran for 5 of them)
    for t in targets[30:35]:
        Prediction.objects.create(method_version=mine, target=t, status="ok", runtime_s=0.01,
                                  started_at=now - dt.timedelta(minutes=5),
                                  finished_at=now - dt.timedelta(minutes=1))
    eta = queue_eta(mine, now=now)
    assert abs(eta["rate"]["per_minute"] - 1.0) < 1e-9 and abs(eta["minutes"] - 10 / 1.0) < 1e-9
    assert eta["text"].startswith("done within about 10 min at its own recent rate (1.0 predictions/min")
    # weighted by length: a queued 800-nt target costs 1 + 2^3 = 9 of the 12-nt ones it ran (cubic); on a
    # dataset where it finished nothing yet, it still has its estimate (stop 44: per dataset, "no estimate
    # yet: none of its predictions finished" with 681 finished elsewhere)
    long_one = make_target("GCAU" * 200, "." * 800, dataset=make_dataset("elsewhere"))
    Prediction.objects.create(method_version=mine, target=long_one)
    short = 1 + (12 / 400) ** 3
    assert queue_eta(mine, now=now)["minutes"] == pytest.approx((10 * short + 9) / (5 * short / 5))
    # nothing finished in the window: no invented estimate
    assert queue_eta(mine, now=now + dt.timedelta(hours=1))["minutes"] is None


def test_a_comparative_method_is_test_run_and_run_on_the_stored_alignment(client, owner, trna_alignment):
    url = reverse("owner-method-new")
    argv = "{python}\n-m\npredictors.programs.alifold\n{alignment}\n--query\nquery\n--mode\nmfe"
    data = form_data(name="OlgaAli(seed)", argv=argv, input="seed", output_format="pairs-json")
    # a test target without a stored alignment is refused at once
    other = Target.objects.exclude(pk=trna_alignment.pk).first()
    r = client.post(url, {**data, "test_target": str(other.pk), "_test": "1"})
    assert r.status_code == 400 and "has none: choose a test target with alignments" in r.content.decode()
    assert not TrialRun.objects.exists()
    form = client.get(url).context["form"]
    assert "alignments" in dict(form.fields["test_target"].choices)[str(trna_alignment.pk)]
    r = client.post(url, {**data, "test_target": str(trna_alignment.pk), "_test": "1"})
    trial = TrialRun.objects.get(requested_by=owner)
    execute_test_run(trial_id=trial.pk)
    result = TrialRun.objects.get(pk=trial.pk).result
    assert result["ok"], result
    (row,) = result["score"]["definitions"]
    assert row["mcc"] > 0.8  # the consensus of three tRNAs is the cloverleaf
    chosen = str(trna_alignment.pk)
    r = client.post(url, {**data, "test_target": chosen, "trial": str(trial.pk), "_check": "1"})
    tested = r.context["form"].data["tested"]
    r = client.post(url, {**data, "test_target": str(trna_alignment.pk), "trial": str(trial.pk),
                          "tested": tested, "_save": "1"})
    assert r.status_code == 302, r.content.decode()[-2000:]
    method = Method.objects.get(name="OlgaAli(seed)")
    assert method.visibility == "development" and method.current_version.spec["comparative_input"] == "seed"
    # its prediction of the target gets the stored alignment, like the catalogue's comparative methods
    p = Prediction.objects.get(method_version__method=method, target=trna_alignment)
    execute_prediction(prediction_id=p.pk)
    p.refresh_from_db()
    assert p.status == "ok" and p.scores.get().mcc > 0.8


def test_targets_over_the_length_limit_are_said_to_be_recorded_too_long(client, owner, trna):
    url = reverse("owner-method-new")
    data = form_data(name="ShortFold", max_length=40, test_sequence="GGGGAAAACCCC")
    client.post(url, {**data, "_test": "1"})
    trial = TrialRun.objects.get(requested_by=owner)
    execute_test_run(trial_id=trial.pk)
    assert TrialRun.objects.get(pk=trial.pk).result["score"]["definitions"][0]["mcc"] is not None
    tested = client.post(url, {**data, "trial": str(trial.pk), "_check": "1"}).context["form"].data["tested"]
    r = client.post(url, {**data, "trial": str(trial.pk), "tested": tested, "_save": "1"}, follow=True)
    method = Method.objects.get(name="ShortFold")
    rows = Prediction.objects.filter(method_version__method=method).values_list("target__length", "status")
    states = dict(rows)
    assert states == {12: "queued", 76: "too_long"}
    assert "ShortFold registered as a development method; 1 prediction queued (1 target over its length " \
           "limit recorded as too long)" in r.content.decode()


def test_the_admin_form_refuses_a_missing_program_too():
    from predictors.forms import PredictorForm

    base = {"name": "MyFold", "program": "myfold", "version": "1", "output_format": "dot-bracket",
            "output_file": "", "max_length": "500", "time_limit_s": "30", "memory_limit_mb": "1024",
            "image": "", "citation": "", "url": "", "description": "", "test_sequence": TEST_SEQUENCE}
    form = PredictorForm({**base, "argv": "RNAfold-not-here\n{fasta}"})
    assert not form.is_valid() and "is not installed in CompaRNA's sandbox" in form.errors["argv"][0]
    # inside a container image the sandbox's PATH does not apply
    assert PredictorForm({**base, "argv": "RNAfold-not-here\n{fasta}", "image": "myfold:1"}).is_valid()
    assert PredictorForm({**base, "argv": MFE_ARGV}).is_valid()
