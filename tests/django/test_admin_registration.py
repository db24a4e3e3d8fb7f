"""Registering a predictor through the admin as a logged-in staff user, with real test runs in the sandbox."""

from __future__ import annotations

import json
import re

import pytest
import RNA
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

import comparna.urls
import predictors.urls
from comparna.models import Dataset
from predictors.forms import TEST_SEQUENCE, parse_argv
from predictors.models import Method, MethodVersion, Prediction, TrialRun
from predictors.trials import execute_test_run
from tests.factories import make_dataset, make_target

# The project URLconf plus the predictor pages (comparna/urls.py includes predictors.urls once wired).
urlpatterns = comparna.urls.urlpatterns + predictors.urls.urlpatterns

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

REGISTER = "admin:predictors_method_register"
MFE_ARGV = '["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"]'


@pytest.fixture
def staff(client):
    user = User.objects.create_user("curator", password="pw", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


@pytest.fixture
def benchmark():
    """Three static-benchmark targets and one PDB target (PDB targets are queued by the weekly poll)."""
    static = make_dataset("strand")
    pdb = make_dataset("pdb")
    Dataset.objects.filter(pk=pdb.pk).update(kind=Dataset.Kind.PDB)
    targets = [
        make_target("GGGAAACCC", "(((...)))", dataset=static),
        make_target("GGGGAAAACCCC", "((((....))))", dataset=static),
        make_target(TEST_SEQUENCE[:40], "." * 40, dataset=static),
    ]
    pdb_target = make_target("GCGCAAAGCGC", "((((...))))", dataset=pdb)
    return targets, pdb_target


def form_data(**overrides) -> dict:
    data = {
        "name": "MyFold",
        "program": "myfold",
        "version": "1.0",
        "argv": MFE_ARGV,
        "output_format": "dot-bracket",
        "output_file": "",
        "max_length": "500",
        "time_limit_s": "30",
        "memory_limit_mb": "1024",
        "image": "",
        "citation": "",
        "url": "",
        "description": "A test predictor.",
        "active": "on",
        "test_sequence": TEST_SEQUENCE,
        "tested": "",
    }
    data.update(overrides)
    return data


def do_test_run(client, url, data):
    """Request a test run; run it as the worker does (the task's body); show the result on the page.

    The page itself only stores the test run and returns at once (tests/e2e/test_browser_pages.py runs
    it through a real worker and the page's polling)."""
    response = client.post(url, {**data, "_test": "Test run"})
    assert response.status_code == 200
    trial = response.context["trial"]
    if trial is None:
        return response  # invalid form: nothing was run
    assert trial.status == TrialRun.Status.QUEUED and response.context["poll_url"]
    assert "Waiting for a worker" in response.content.decode()
    execute_test_run(trial_id=str(trial.pk))
    polled = client.get(response.context["poll_url"]).json()
    assert polled["status"] == "done"
    checked = client.post(url, {**data, "trial": str(trial.pk), "_check": "Show the result"})
    assert checked.status_code == 200 and checked.context["result"] == polled_result(trial)
    # the same signed spec hash (the tokens themselves carry their signing second, so they may differ)
    from django.core import signing

    from predictors.forms import _TOKEN_SALT

    def payload(token):  # "" when the run cannot be saved (failed, unparsable, over its limit)
        return signing.loads(token, salt=_TOKEN_SALT) if token else token

    assert payload(checked.context["form"]["tested"].value()) == payload(polled["tested"])
    return checked


def polled_result(trial) -> dict:
    trial.refresh_from_db()
    return trial.result


def register(client, url, data):
    """Test run, then save with the token of the successful test run; returns the save response."""
    response = do_test_run(client, url, data)
    assert response.context["result"]["ok"], response.context["result"]
    token = response.context["form"]["tested"].value()
    assert token
    return client.post(url, {**data, "tested": token, "_save": "Save"})


def test_add_button_leads_to_the_registration_form(staff):
    response = staff.get(reverse("admin:predictors_method_add"))
    assert response.status_code == 302 and response.url == reverse(REGISTER)
    page = staff.get(reverse(REGISTER))
    assert page.status_code == 200 and "Test run" in page.content.decode()


def test_shell_string_argv_is_rejected_with_a_message(staff):
    response = do_test_run(staff, reverse(REGISTER), form_data(argv="RNAfold --noPS < {fasta}"))
    errors = response.context["form"].errors["argv"]
    assert "looks like a shell command line" in errors[0]
    assert response.context["result"] is None  # nothing was run
    assert not Method.objects.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ('["myfold", "{fasta}"', "Invalid JSON list"),
        ('["myfold", 3]', "list of strings"),
        ("myfold\n|\nhead\n{fasta}", "shell operator"),
        ("myfold\n{input}", "unknown placeholder {input}"),
        ("myfold\n--quiet", "argv passes no input"),
    ],
)
def test_invalid_argv_messages(staff, argv, message):
    response = do_test_run(staff, reverse(REGISTER), form_data(argv=argv))
    assert message in " ".join(response.context["form"].errors["argv"])
    assert message in response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')


def test_limits_and_output_format_are_validated(staff):
    response = do_test_run(
        staff, reverse(REGISTER), form_data(max_length="0", memory_limit_mb="8", output_format="fasta")
    )
    errors = response.context["form"].errors
    assert set(errors) >= {"max_length", "memory_limit_mb", "output_format"}


def test_argv_one_per_line_equals_json_list():
    per_line = parse_argv("{python}\n  -m \npredictors.programs.vienna_fold\n\n{fasta}\n")
    assert per_line == parse_argv('["{python}", "-m", "predictors.programs.vienna_fold", "{fasta}"]')


def test_test_run_shows_the_real_structure(staff):
    response = do_test_run(staff, reverse(REGISTER), form_data())
    result = response.context["result"]
    assert result["ok"] and result["status"] == "ok"
    assert result["runner"].startswith("sandbox")
    expected, _energy = RNA.fold(TEST_SEQUENCE)  # ViennaRNA directly, outside the sandbox and the parser
    assert result["dot_bracket"] == expected
    page = response.content.decode()
    assert expected in page and "You can now save" in page
    assert not Method.objects.exists()  # a test run saves nothing


def test_failing_test_run_shows_the_error_and_cannot_be_saved(staff):
    url = reverse(REGISTER)
    code = "import sys; sys.stderr.write('boom'); sys.exit(3)"
    data = form_data(argv=json.dumps(["{python}", "-c", code, "{fasta}"]))
    response = do_test_run(staff, url, data)
    result = response.context["result"]
    assert result["status"] == "failed" and result["exit_code"] == 3 and "boom" in result["stderr_tail"]
    assert 'id="test-error"' in response.content.decode()
    assert response.context["form"]["tested"].value() == ""
    saved = staff.post(url, {**data, "_save": "Save"})
    assert saved.status_code == 200 and "successful test run" in saved.content.decode()
    assert not Method.objects.exists()


def test_unparsable_output_is_shown(staff):
    data = form_data(argv='["{python}", "-c", "print(\'not a structure\')", "{fasta}"]')
    result = do_test_run(staff, reverse(REGISTER), data).context["result"]
    assert result["status"] == "unparsable" and result["message"]


def test_save_needs_a_test_run_of_the_same_spec(staff, benchmark):
    url = reverse(REGISTER)
    response = do_test_run(staff, url, form_data())
    token = response.context["form"]["tested"].value()
    # The version changed after the test run: the token does not cover it.
    changed = staff.post(url, {**form_data(version="2.0"), "tested": token, "_save": "Save"})
    assert changed.status_code == 200 and "successful test run" in changed.content.decode()
    forged = staff.post(url, {**form_data(), "tested": "x" + token, "_save": "Save"})
    assert forged.status_code == 200
    assert not Method.objects.exists()


def test_save_creates_the_method_and_queues_the_static_benchmark(staff, benchmark):
    targets, pdb_target = benchmark
    response = register(staff, reverse(REGISTER), form_data())
    method = Method.objects.get(name="MyFold")
    assert response.status_code == 302 and response.url == reverse("method-status", args=["MyFold"])
    assert method.active and not method.from_catalogue
    version = MethodVersion.objects.get(method=method)
    assert version.is_current and version.spec["argv"][-1] == "{fasta}" and version.spec["time_limit_s"] == 30
    queued = Prediction.objects.filter(method_version=version)
    assert sorted(queued.values_list("target_id", flat=True)) == sorted(t.pk for t in targets)
    assert set(queued.values_list("status", flat=True)) == {Prediction.Status.QUEUED}
    assert not Prediction.objects.filter(target=pdb_target).exists()
    changelist = staff.get(reverse("admin:predictors_method_changelist")).content.decode()
    assert reverse("method-status", args=["MyFold"]) in changelist
    change = staff.get(reverse("admin:predictors_method_change", args=[method.pk])).content.decode()
    assert reverse("admin:predictors_method_edit_spec", args=[method.pk]) in change

    # The status page shows the progress: 3 queued, nothing finished yet; then one failure appears.
    page = staff.get(response.url).content.decode()
    assert re.search(r'data-status="queued"><td>[^<]+</td><td class="num">3</td>', page)
    assert re.search(r'data-status="ok"><td>[^<]+</td><td class="num">0</td>', page)
    assert '<span id="finished">0</span> of <span id="total">3</span>' in page
    p = queued.first()
    Prediction.objects.filter(pk=p.pk).update(status=Prediction.Status.TIMEOUT, error="wall-clock limit 30 s")
    page = staff.get(response.url).content.decode()
    assert '<span id="finished">1</span>' in page and "wall-clock limit 30 s" in page
    assert p.target.source_id in page

    # The same name cannot be registered twice.
    again = do_test_run(staff, reverse(REGISTER), form_data())
    assert "already exists" in " ".join(again.context["form"].errors["name"])


def test_inactive_method_is_saved_but_not_queued(staff, benchmark):
    data = form_data(name="Dormant")
    del data["active"]
    register(staff, reverse(REGISTER), data)
    assert Method.objects.get(name="Dormant").active is False
    assert not Prediction.objects.exists()


def test_editing_argv_makes_a_second_version(staff, benchmark):
    targets, _ = benchmark
    register(staff, reverse(REGISTER), form_data())
    method = Method.objects.get(name="MyFold")
    first = method.current_version
    Prediction.objects.filter(method_version=first).update(status=Prediction.Status.OK, pairs="")
    edit_url = reverse("admin:predictors_method_edit_spec", args=[method.pk])

    # The edit form starts from the current spec, one argument per line.
    initial = staff.get(edit_url).context["form"]
    assert initial["argv"].value().splitlines()[-1] == "{fasta}"

    # Only a limit changes: same fingerprint, same version, the new limit reaches the stored spec.
    register(staff, edit_url, form_data(time_limit_s="45"))
    assert method.versions.count() == 1
    assert MethodVersion.objects.get(pk=first.pk).spec["time_limit_s"] == 45

    new_argv = MFE_ARGV.replace('"mfe"', '"centroid"')
    data = form_data(argv=new_argv, output_format="pairs-json", time_limit_s="45")
    response = register(staff, edit_url, data)
    assert response.status_code == 302
    assert method.versions.count() == 2
    second = method.current_version
    assert second.pk != first.pk and second.fingerprint != first.fingerprint
    assert MethodVersion.objects.get(pk=first.pk).is_current is False
    # Old predictions are kept, new ones queued for the new version only: never mixed.
    ok, queued = Prediction.Status.OK, Prediction.Status.QUEUED
    assert Prediction.objects.filter(method_version=first, status=ok).count() == len(targets)
    assert Prediction.objects.filter(method_version=second, status=queued).count() == len(targets)
    page = staff.get(reverse("method-status", args=["MyFold"])).content.decode()
    assert "Earlier versions" in page


def test_catalogue_methods_are_not_edited_in_the_admin(staff):
    from predictors.catalogue import get_spec
    from predictors.services import register_spec

    version = register_spec(spec=get_spec("RNAfold-MFE"), from_catalogue=True)
    url = reverse("admin:predictors_method_edit_spec", args=[version.method.pk])
    response = staff.post(url, {**form_data(name="RNAfold-MFE"), "_test": "Test run"})
    assert "declared in the built-in catalogue" in response.content.decode()
    assert response.context["result"] is None


def test_non_staff_cannot_register(client):
    User.objects.create_user("visitor", password="pw")
    client.login(username="visitor", password="pw")
    response = client.post(reverse(REGISTER), {**form_data(), "_test": "Test run"})
    assert response.status_code == 302 and "/login/" in response.url


def test_activating_in_the_change_form_queues(staff, benchmark):
    targets, _ = benchmark
    data = form_data(name="Later")
    del data["active"]
    register(staff, reverse(REGISTER), data)
    method = Method.objects.get(name="Later")
    response = staff.post(
        reverse("admin:predictors_method_change", args=[method.pk]),
        {"active": "on", "versions-TOTAL_FORMS": "1", "versions-INITIAL_FORMS": "1",
         "versions-MIN_NUM_FORMS": "0", "versions-MAX_NUM_FORMS": "1000",
         "versions-0-id": str(method.current_version.pk), "versions-0-method": str(method.pk)},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    assert Prediction.objects.filter(method_version__method=method).count() == len(targets)


def test_test_run_returns_at_once_and_one_at_a_time(staff):
    url = reverse(REGISTER)
    data = form_data(argv=json.dumps(["/bin/sh", "-c", "sleep 600; : {sequence}"]))
    first = staff.post(url, {**data, "_test": "Test run"})
    assert first.context["trial"].status == TrialRun.Status.QUEUED  # nothing ran in the request
    second = staff.post(url, {**data, "_test": "Test run"})
    assert "previous test run has not finished" in second.content.decode()
    assert TrialRun.objects.count() == 1
    # Another user cannot see it.
    other = Client()
    other.force_login(User.objects.create_user("other", password="pw", is_staff=True))
    assert other.get(first.context["poll_url"]).status_code == 404


def test_test_run_is_capped_at_the_configured_limit(staff, settings):
    settings.TEST_RUN_TIME_LIMIT_S = 1.0
    data = form_data(argv=json.dumps(["/bin/sh", "-c", "sleep 600; : {sequence}"]), time_limit_s="600")
    result = do_test_run(staff, reverse(REGISTER), data).context["result"]
    assert result["status"] == "timeout" and result["limits"]["wall_s"] == 1.0
