"""Issue 26, the execution side, through the worker's task code, the periodic sweep, the registration forms
and the owners' and blind APIs (Django test client), with the real bubblewrap sandbox and a real web service
on loopback.

A program that leaves a directory tree too deep for ``shutil.rmtree`` must still get a final outcome, and
its leftovers must neither survive nor stop the sweep; a memory limit above the host's is refused at
registration; output with a 5000-digit integer is a final ``unparsable`` outcome (never a re-queue), and
the same body sent to the upload APIs is a 400 with the reason.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.blind import prerelease
from comparna.blind.models import BlindTarget, BlindWeek
from comparna.models import Target
from comparna.owners.models import ApiToken, OwnerProfile
from predictors.core.runners import SandboxRunner
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import jobs_root, process_token
from predictors.forms import TEST_SEQUENCE
from predictors.models import Method, Prediction, TrialRun
from predictors.services import execute_prediction, queue_predictions, register_spec
from predictors.tasks import requeue_stuck_predictions_task
from predictors.trials import execute_test_run
from predictors.webservices import callback_token
from tests.factories import make_dataset, make_target

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed"),
]

SEQ = "GGGGAAACCCC"
HUGE = "9" * 5000
DEEP_TREE = "import os\nfor k in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\nprint('((((...))))')\n"
#: A command printing ``{"pairs": [[1, <5000 digits>]]}`` (braces would be argv placeholders: made by chr()).
HUGE_PAIRS = "import sys\nsys.stdout.write(chr(123) + '\"pairs\": [[1, ' + '9' * 5000 + ']]' + chr(125))\n"


def my_run_dirs() -> set:
    return {d for d in jobs_root().iterdir() if process_token() in d.name}


def command_method(name: str, code: str, **kw) -> None:
    spec = PredictorSpec(
        name=name, program=name.lower(), version="1", argv=("{python}", "-c", code, "{fasta}"),
        time_limit_s=30, memory_limit_mb=512, **kw,
    )
    register_spec(spec=spec, from_catalogue=False, active=True)


# -- 1. cleanup ----------------------------------------------------------------------------------------------
def test_a_prediction_leaving_a_deep_tree_is_recorded_and_its_run_dir_removed():
    target = make_target(SEQ, "((((...))))", dataset=make_dataset("strand"))
    command_method("DeepTree", DEEP_TREE)
    queue_predictions(targets=[target])
    before = my_run_dirs()
    prediction = Prediction.objects.get(target=target, method_version__method__name="DeepTree")
    execute_prediction(prediction_id=prediction.pk)  # what run_prediction_task runs in the worker
    prediction.refresh_from_db()
    assert prediction.status == Prediction.Status.OK and prediction.attempts == 1, prediction.error
    assert my_run_dirs() == before


def test_a_test_run_leaving_a_deep_tree_is_done():
    spec = PredictorSpec(
        name="DeepTrial", program="deep", version="1", argv=("{python}", "-c", DEEP_TREE, "{fasta}"),
        time_limit_s=30, memory_limit_mb=512,
    )
    from predictors.trials import request_test_run

    trial = request_test_run(spec=spec, sequence=SEQ, user=None)
    execute_test_run(trial_id=str(trial.pk))  # what run_test_task runs in the worker
    trial.refresh_from_db()
    assert trial.status == TrialRun.Status.DONE and trial.result["status"] == "ok", trial.result


def _dead_token() -> str:
    import subprocess

    dead = subprocess.Popen(["/bin/true"])
    token = process_token(dead.pid)
    dead.wait()
    return token


def test_the_sweep_removes_a_dead_workers_deep_tree_and_still_requeues():
    run_dir = jobs_root() / f"run-{_dead_token()}-0badc0de"
    os.makedirs(run_dir / "work")
    fd = os.open(run_dir / "work", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1500):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)
    # A prediction whose worker died long ago: the sweep puts it back in the queue after the cleanup.
    target = make_target(SEQ, "((((...))))", dataset=make_dataset("strand"))
    command_method("Stuck", "print('((((...))))')")
    queue_predictions(targets=[target])
    stuck = Prediction.objects.get(target=target, method_version__method__name="Stuck")
    long_ago = timezone.now() - dt.timedelta(days=2)
    Prediction.objects.filter(pk=stuck.pk).update(
        status=Prediction.Status.RUNNING, worker=_dead_token(), started_at=long_ago
    )
    requeue_stuck_predictions_task()  # the periodic sweep, as the default worker runs it
    assert not run_dir.exists()
    stuck.refresh_from_db()
    assert stuck.status == Prediction.Status.QUEUED


# -- 3. memory ceiling at registration --------------------------------------------------------------------
def test_registration_refuses_a_memory_limit_above_the_host(client):
    user = User.objects.create_user("developer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="add_method"))
    client.force_login(user)
    argv = ["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"]
    data = {
        "name": "Greedy", "program": "greedy", "version": "1", "argv": json.dumps(argv),
        "output_format": "dot-bracket", "output_file": "", "max_length": "500", "time_limit_s": "30",
        "memory_limit_mb": "65536", "image": "", "citation": "", "url": "", "description": "",
        "active": "on", "test_sequence": TEST_SEQUENCE, "tested": "", "_test": "Test run",
    }
    response = client.post(reverse("admin:predictors_method_register"), data)
    assert response.status_code == 200
    assert "more than this server gives a run" in response.content.decode()
    assert not TrialRun.objects.exists() and not Method.objects.filter(name="Greedy").exists()
    data["memory_limit_mb"] = "512"
    response = client.post(reverse("admin:predictors_method_register"), data)
    assert "more than this server gives a run" not in response.content.decode()
    assert TrialRun.objects.count() == 1


def test_the_owner_form_refuses_a_memory_limit_above_the_host():
    from comparna.owners.forms import OwnerMethodForm

    form = OwnerMethodForm(
        {"name": "Greedy", "kind": "web", "memory_limit_mb": "65536"}, uploads=[], fixed_name=None
    )
    assert not form.is_valid()
    assert "more than this server gives a run" in " ".join(form.errors["memory_limit_mb"])


# -- 4. never-ending predictions ---------------------------------------------------------------------------
def test_a_5000_digit_integer_from_a_command_is_a_final_unparsable_outcome():
    target = make_target(SEQ, "((((...))))", dataset=make_dataset("strand"))
    command_method("HugeInt", HUGE_PAIRS, output_format="pairs-json")
    queue_predictions(targets=[target])
    prediction = Prediction.objects.get(target=target, method_version__method__name="HugeInt")
    execute_prediction(prediction_id=prediction.pk)
    prediction.refresh_from_db()
    assert prediction.status == Prediction.Status.UNPARSABLE and prediction.attempts == 1
    assert "5000 digits" in prediction.error and prediction.finished_at is not None


def _owner(name: str) -> tuple[User, Client]:
    user = User.objects.create_user(name, f"{name}@x.org", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    _, key = ApiToken.issue(user=user, name=name)
    return user, Client(HTTP_AUTHORIZATION=f"Token {key}")


def _web_method(name: str, owner: User, visibility: str = "development") -> Method:
    spec = PredictorSpec(name=name, program=name.lower(), version="1", argv=(), kind="web", endpoint=None)
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    Method.objects.filter(pk=version.method_id).update(owner=owner, visibility=visibility)
    return Method.objects.get(pk=version.method_id)


#: Upload bodies (besides method and target) that must be answered 400 with the reason.
HOSTILE_UPLOADS = [
    ({"format": "pairs-json", "structure": '{"pairs": [[1, ' + HUGE + "]]}"}, "5000 digits"),
    ({"format": "pairs", "structure": [[1, int("9" * 4000)]]}, "4000 digits"),
    ({"format": "pairs", "structure": [[1, 11]], "probabilities": [[1, 11, int("9" * 4000)]]}, "probability"),
    ({"format": "pairs-json", "structure": '{"pairs": [[1, 11]], "probabilities": [[1, 11, NaN]]}'},
     "finite"),
    ({"format": "pairs-json", "structure": '{"pairs": ' + "[" * 50000 + "]" * 50000 + "}"}, "nested"),
    ({"format": "pairs-json", "structure": '{"pairs": [[1, 1e999]]}'}, "not a list of two integers"),
]


@pytest.mark.parametrize(("body", "reason"), HOSTILE_UPLOADS, ids=range(len(HOSTILE_UPLOADS)))
def test_owner_upload_and_callback_of_unparsable_numbers_answer_400(body, reason):
    bob, api = _owner("bob")
    method = _web_method("BobWeb", bob)
    target = make_target(SEQ, "((((...))))", dataset=make_dataset("strand"))
    prediction = Prediction.objects.create(method_version=method.current_version, target=target)
    r = api.post(
        "/api/owner/predictions/", {"method": method.pk, "target": target.pk, **body},
        content_type="application/json",
    )
    assert r.status_code == 400, r.content[:300]
    assert reason in r.json()["error"], r.json()
    r = Client().post(
        "/api/owner/callback/", body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {callback_token(prediction.pk)}",
    )
    assert r.status_code == 400, r.content[:300]
    assert reason in r.json()["error"], r.json()
    prediction.refresh_from_db()
    assert prediction.status == Prediction.Status.QUEUED and not prediction.pairs


UPLOAD_URLS = ["/api/owner/predictions/", "/api/owner/callback/", "/api/blind/predictions/"]


@pytest.mark.parametrize("url", UPLOAD_URLS)
def test_a_request_body_nested_too_deeply_answers_400(url):
    bob, api = _owner("bob")
    method = _web_method("BobWeb", bob)
    target = make_target(SEQ, "((((...))))", dataset=make_dataset("strand"))
    prediction = Prediction.objects.create(method_version=method.current_version, target=target)
    if url == "/api/owner/callback/":
        api = Client(HTTP_AUTHORIZATION=f"Token {callback_token(prediction.pk)}")
    body = '{"method": 1, "target": 1, "format": "pairs", "structure": ' + "[" * 5000 + "]" * 5000 + "}"
    r = api.post(url, body, content_type="application/json")
    assert r.status_code == 400 and "nested too deeply" in r.json()["detail"], r.content[:300]


def test_blind_submission_of_a_5000_digit_integer_answers_400(settings):
    release = dt.date(2024, 1, 10)
    settings.CLOCK = f"2024-01-07T22:00:00Z@{time.time():.3f}x1"
    week = prerelease.ensure_week(release)
    week.status = BlindWeek.Status.OPEN
    week.save()
    sequence = "GGGAAAUCCCGCGAAAGCGAAAGGGAAACCCUUUCGCGAAAGCGCC"
    target = Target.objects.create(
        dataset=prerelease.ensure_blind_dataset(), source_id="9ABC_1", sequence=sequence, length=len(sequence)
    )
    BlindTarget.objects.create(week=week, target=target, pdb_id="9ABC", entity_id="1", announced=sequence)
    bob, api = _owner("bob")
    _web_method("BobServer", bob, visibility="public")
    r = api.post(
        "/api/blind/predictions/",
        {"method": "BobServer", "target": target.pk, "format": "pairs-json",
         "structure": '{"pairs": [[1, ' + HUGE + "]]}"},
        content_type="application/json",
    )
    assert r.status_code == 400, r.content[:300]
    assert "5000 digits" in r.json()["error"]
    assert not Prediction.objects.filter(target=target).exclude(status="queued").exists()
