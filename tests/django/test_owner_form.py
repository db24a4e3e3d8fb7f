"""The registration form as a method author meets it (issue 29, item 7): each kind's own fields, the
``{{ }}`` escape explained where the command is typed, and a warning — not a block — when the test run's
answer holds no pairs or cannot be read. Through the Django test client; test runs in the real sandbox."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.owners.models import OwnerProfile
from predictors.forms import TEST_SEQUENCE
from predictors.models import Method, TrialRun
from predictors.trials import execute_test_run

pytestmark = pytest.mark.django_db

BASE = {
    "kind": "command", "program": "oneliner", "version": "1", "input": "single",
    "output_format": "dot-bracket", "argv": "", "output_file": "", "endpoint": "", "max_concurrent": 2,
    "requests_per_minute": 60, "retries": 1, "upload_window_h": 1, "max_length": 1000, "time_limit_s": 30,
    "memory_limit_mb": 1024, "test_sequence": TEST_SEQUENCE, "tested": "", "trial": "", "image_archive": "",
}
# A Python one-liner whose dict literal needs literal braces: it answers an unpaired structure.
UNPAIRED = [
    "python3", "-c",
    "import sys; seq = open(sys.argv[1]).read().split()[-1]; d = {{'.': len(seq)}}; print('.' * d['.'])",
    "{fasta}",
]


@pytest.fixture
def owner() -> Client:
    user = User.objects.create_user("formowner", "f@x.org", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    client = Client()
    client.force_login(user)
    return client


def fieldset_of(page: str, field: str) -> str:
    """The opening tag of the fieldset holding the form field ``field``."""
    at = page.index(f'name="{field}"')
    return page[page.rindex("<fieldset", 0, at) : page.index(">", page.rindex("<fieldset", 0, at)) + 1]


def test_each_kind_has_its_own_fieldset_and_the_brace_escape_is_explained(owner):
    page = owner.get(reverse("owner-method-new")).content.decode()
    for field in ("argv", "output_file"):
        assert 'data-kinds="command image"' in fieldset_of(page, field)
    for field in ("endpoint", "max_concurrent", "requests_per_minute", "retries", "upload_window_h"):
        assert 'data-kinds="web"' in fieldset_of(page, field)
    for field in ("archive", "image_archive"):
        assert 'data-kinds="image"' in fieldset_of(page, field)
    for field in ("name", "kind", "time_limit_s", "test_sequence"):
        assert "data-kinds" not in fieldset_of(page, field)  # shared by every kind
    assert re.search(r'<script src="[^"]*owner_form[^"]*\.js"', page)
    help_text = html.unescape(page[page.index('id="id_argv_helptext"') :].split("</span>", 1)[0])
    assert "{{'a': 1}}" in help_text and "twice" in help_text


def post(client: Client, data: dict, **extra):
    return client.post(reverse("owner-method-new"), {**BASE, **data, **extra})


def test_unknown_placeholder_error_says_how_to_escape_braces(owner):
    for argv in (["python3", "-c", "print({'a': 1})", "{fasta}"], ["python3", "{input}"]):
        r = post(owner, {"name": "Braces", "argv": json.dumps(argv)}, _test="1")
        assert r.status_code == 400
        errors = " ".join(r.context["form"].errors.get("argv", []))
        assert "write it twice: {{ and }}" in errors, errors
    assert not TrialRun.objects.exists()


def test_server_reads_only_the_chosen_kinds_fields(owner):
    # a command method without a command is refused even with a web endpoint filled in
    r = post(owner, {"name": "NoCommand", "endpoint": "https://example.org/fold"}, _test="1")
    assert r.status_code == 400 and r.context["form"].errors.get("argv")
    # a web method's stray command is not checked (nor stored): only its endpoint counts
    r = post(owner, {"name": "WebOnly", "kind": "web", "argv": "{nonsense}",
                     "endpoint": "https://example.org/fold"}, _test="1")
    assert r.status_code == 200, r.context["form"].errors
    trial = TrialRun.objects.get()
    assert trial.spec["kind"] == "web" and not trial.spec["argv"]


def run_and_check(client: Client, data: dict):
    """Test run (executed here as the worker would), then the page after it; returns (page, data)."""
    r = post(client, data, _test="1")
    assert r.status_code == 200, r.context["form"].errors
    trial = TrialRun.objects.filter(spec__name=data["name"]).get()
    execute_test_run(trial_id=trial.pk)
    r = post(client, data, trial=str(trial.pk), _check="1")
    return r.content.decode(), r.context["form"].data["tested"], trial


def test_no_pairs_is_a_warning_and_the_one_liner_with_escaped_braces_runs_and_saves(owner):
    data = {"name": "Unpaired", "argv": json.dumps(UNPAIRED)}
    page, tested, trial = run_and_check(owner, data)
    trial.refresh_from_db()
    assert trial.result["ok"] and trial.result["n_pairs"] == 0, trial.result
    assert 'id="test-warning"' in page and "no base pairs" in page
    assert tested
    r = post(owner, data, trial=str(trial.pk), tested=tested, _save="1")
    assert r.status_code == 302
    assert Method.objects.get(name="Unpaired").current_version.spec["argv"][2] == UNPAIRED[2]


def test_unparsable_answer_is_a_warning_not_a_block(owner):
    data = {"name": "Chatty", "argv": json.dumps(["python3", "-c", "print('hello world')", "{fasta}"])}
    page, tested, trial = run_and_check(owner, data)
    trial.refresh_from_db()
    assert trial.result["status"] == "unparsable", trial.result
    assert 'id="test-warning"' in page and "could not be read" in page and 'id="test-error"' not in page
    assert tested
    r = post(owner, data, trial=str(trial.pk), tested=tested, _save="1")
    assert r.status_code == 302
    # the poll answer (what the page's script shows) says the same and allows saving
    poll = owner.get(reverse("owner-test-run", args=[trial.pk])).json()
    assert poll["tested"] and "could not be read" in poll["html"]
