"""The attacks of issue 11 through the real admin and worker code paths, with the real sandbox.

An attacker is a method developer: a staff user with only the "add method" permission. Their command
tries to read the database of the data directory (shown by the admin's test run), or creates its output
file as a link to a host file holding a secret (read by the worker, stored in ``Prediction.error`` and
served by the public API). Nothing of the database, the host files or the worker's environment may show
up in any stored or served text.
"""

from __future__ import annotations

import json
import uuid

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from predictors.core.runners import SandboxRunner
from predictors.core.spec import PredictorSpec
from predictors.forms import TEST_SEQUENCE
from predictors.models import Prediction
from predictors.services import execute_prediction, queue_predictions, register_spec
from predictors.trials import execute_test_run
from tests.factories import make_dataset, make_target

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed"),
]


@pytest.fixture
def developer(client):
    """A method developer: staff, allowed to add methods, nothing else."""
    user = User.objects.create_user("developer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="add_method"))
    client.force_login(user)
    return client


@pytest.fixture
def data_dir_secret():
    """A database-like file in the real data directory (the default SQLite file's neighbour)."""
    secret = f"db-secret-{uuid.uuid4().hex}"
    path = settings.DATA_DIR / f"i11-{uuid.uuid4().hex}.sqlite3"
    path.write_bytes(b"SQLite format 3\0" + secret.encode())
    yield path, secret
    path.unlink()


def test_admin_test_run_cannot_read_the_database(developer, data_dir_secret):
    path, secret = data_dir_secret
    db = settings.DATA_DIR / "comparna.sqlite3"  # the embedded run's database
    argv = ["/bin/sh", "-c", 'cat "$1" "$2"; ls -la "$3"; : {sequence}', "sh", str(path), str(db),
            str(settings.DATA_DIR)]
    data = {
        "name": "Dumper", "program": "dumper", "version": "1", "argv": json.dumps(argv),
        "output_format": "dot-bracket", "output_file": "", "max_length": "500", "time_limit_s": "30",
        "memory_limit_mb": "512", "image": "", "citation": "", "url": "", "description": "",
        "active": "on", "test_sequence": TEST_SEQUENCE, "tested": "", "_test": "Test run",
    }
    response = developer.post(reverse("admin:predictors_method_register"), data)
    assert response.status_code == 200
    trial = response.context["trial"]
    execute_test_run(trial_id=str(trial.pk))  # what the worker runs (queue "testrun")
    polled = developer.get(response.context["poll_url"]).json()
    trial.refresh_from_db()
    shown = polled["html"] + json.dumps(trial.result)
    assert "No such file or directory" in shown  # the attempt was made and failed
    assert secret not in shown and "SQLite format 3" not in shown and "django_session" not in shown


@pytest.fixture
def host_secrets(tmp_path, monkeypatch):
    """A root-only 0600 file and a secret in the worker's environment (DJANGO_SECRET_KEY)."""
    file_secret = f"file-secret-{uuid.uuid4().hex}"
    secret_file = tmp_path / "root-only.txt"
    secret_file.write_text(f"((((...))))\n{file_secret}\n")
    secret_file.chmod(0o600)
    env_secret = f"env-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("DJANGO_SECRET_KEY", env_secret)
    return secret_file, (file_secret, env_secret)


def test_symlinked_outputs_leak_nothing_into_stored_or_served_text(client, host_secrets):
    secret_file, secrets = host_secrets
    target = make_target("GGGGAAACCCC", "((((...))))", dataset=make_dataset("strand"))
    names = []
    for k, link in enumerate(("/proc/self/environ", "/etc/shadow", str(secret_file))):
        spec = PredictorSpec(
            name=f"Linker{k}", program="linker", version="1",
            argv=("/bin/sh", "-c", 'ln -s "$0" out.db; : {sequence}', link),
            output_file="out.db", time_limit_s=30, memory_limit_mb=256,
        )
        register_spec(spec=spec, from_catalogue=False, active=True)
        names.append(spec.name)
    queue_predictions(targets=[target])
    for prediction in Prediction.objects.filter(target=target):
        execute_prediction(prediction_id=prediction.pk)  # what run_prediction_task runs in the worker
    stored = list(Prediction.objects.filter(target=target, method_version__method__name__in=names))
    assert len(stored) == 3
    for p in stored:
        assert p.status == Prediction.Status.UNPARSABLE and "symbolic link" in p.error, p.error
    served = client.get("/api/predictions/", {"target": target.pk}).content.decode()
    served += "".join(client.get(f"/api/predictions/{p.pk}/").content.decode() for p in stored)
    assert "symbolic link" in served
    texts = served + "".join(p.error + p.stderr_tail for p in stored)
    for secret in secrets:
        assert secret not in texts
    assert "root:" not in texts
