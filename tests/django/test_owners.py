"""Method owners through the real pages and API (Django test client): sign-up, confirmation by e-mail,
staff approval, registration with a test run, development methods private to their owner, tokens, uploads
validated, web-service throttling. Runs go through the real runners (sandbox, web service on loopback)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.owners.models import ApiToken, OwnerProfile
from comparna.services.rankings import rank_subset
from predictors.core.spec import PredictorSpec
from predictors.forms import TEST_SEQUENCE
from predictors.models import Method, Prediction, TrialRun
from predictors.services import execute_prediction, register_spec
from predictors.trials import execute_test_run
from predictors.webservices import callback_token, throttle_delay
from tests.factories import make_dataset, make_target
from tests.support.local_predictor_service import PredictorService, mfe

pytestmark = [pytest.mark.django_db]

MFE_ARGV = '["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"]'


@pytest.fixture(autouse=True)
def loopback_allowed(monkeypatch, settings):
    monkeypatch.setenv("COMPARNA_WEBSERVICE_ALLOWED_NETWORKS", "127.0.0.0/8")
    settings.WEBSERVICE_BACKOFF_S = 0.05
    settings.SITE_URL = "http://testserver"


@pytest.fixture
def targets():
    ds = make_dataset("strand")
    return [
        make_target("GGGGAAAACCCC", "((((....))))", dataset=ds),
        make_target("GGGAAAUCCCGCGAAAGCG", "(((....)))((....)).", dataset=ds),
        make_target(
            TEST_SEQUENCE,
            "(((((((..((((........)))).(((((.......))))).....(((((.......))))))))))))....",
            dataset=ds,
        ),
    ]


def sign_up_and_confirm(client: Client, name: str, commit) -> User:
    """``commit`` is pytest-django's django_capture_on_commit_callbacks: e-mails are sent on commit."""
    with commit(execute=True):
        r = client.post(
        reverse("owner-signup"),
        {
            "username": name,
            "email": f"{name}@lab.example",
            "affiliation": "Lab",
            "password1": "a long passphrase 42",
            "password2": "a long passphrase 42",
        },
    )
    assert r.status_code == 200 and b"signup-done" in r.content
    user = User.objects.get(username=name)
    assert not user.is_active  # nothing works before the address is confirmed
    body = next(m.body for m in mail.outbox if m.to == [f"{name}@lab.example"])
    link = re.search(r"http://testserver(/account/confirm/\S+/)", body).group(1)
    with commit(execute=True):
        assert client.get(link).status_code == 200
    user.refresh_from_db()
    assert user.is_active and user.owner_profile.email_confirmed_at is not None
    return user


def approve(user: User, commit) -> None:
    staff = User.objects.get_or_create(username=f"staff-{user.username}", defaults={
        "email": f"staff-{user.username}@x.org", "is_staff": True, "is_superuser": True})[0]
    admin = Client()
    admin.force_login(staff)
    profile = OwnerProfile.objects.get(user=user)
    with commit(execute=True):
        r = admin.post(
            reverse("admin:owners_ownerprofile_changelist"),
            {"action": "approve", "_selected_action": [profile.pk]},
        )
    assert r.status_code == 302
    profile.refresh_from_db()
    assert profile.approved_at is not None


def register(client: Client, data: dict, files=None) -> Method:
    """Test run (executed here as the worker would), then save; returns the new method."""
    base = {
        "name": "",
        "kind": "command",
        "program": "p",
        "version": "1",
        "input": "single",
        "output_format": "dot-bracket",
        "argv": "",
        "output_file": "",
        "endpoint": "",
        "max_concurrent": 2,
        "requests_per_minute": 60,
        "retries": 1,
        "upload_window_h": 1,
        "max_length": 1000,
        "time_limit_s": 30,
        "memory_limit_mb": 1024,
        "test_sequence": TEST_SEQUENCE,
        "tested": "",
        "trial": "",
        "image_archive": "",
    }
    base.update(data)
    url = reverse("owner-method-new")
    r = client.post(url, {**base, "_test": "1"}, **({"files": files} if files else {}))
    assert r.status_code == 200, r.content.decode()[:3000]
    trial = TrialRun.objects.filter(requested_by=r.wsgi_request.user).order_by("-created_at").first()
    execute_test_run(trial_id=trial.pk)
    r = client.post(url, {**base, "trial": str(trial.pk), "_check": "1"})
    tested = r.context["form"].data["tested"]
    assert tested, TrialRun.objects.get(pk=trial.pk).result
    r = client.post(url, {**base, "trial": str(trial.pk), "tested": tested, "_save": "1"})
    assert r.status_code == 302, r.content.decode()[:3000]
    return Method.objects.get(name=base["name"])


def run_all(method: Method) -> dict[str, int]:
    for p in Prediction.objects.filter(method_version__method=method, status="queued"):
        execute_prediction(prediction_id=p.pk)
    return dict(
        (s, Prediction.objects.filter(method_version__method=method, status=s).count())
        for s in ("ok", "failed", "timeout", "unparsable", "awaiting")
    )


def test_sign_up_confirm_approve_register_then_private_until_published(
    client, targets, django_capture_on_commit_callbacks
):
    User.objects.create_superuser("staff-alice", "staff-alice@x.org", "pw")
    user = sign_up_and_confirm(client, "alice", django_capture_on_commit_callbacks)
    assert [m.to for m in mail.outbox if "awaits approval" in m.subject] == [["staff-alice@x.org"]]
    client.force_login(user)
    # not approved yet: the form refuses to save, and says why
    r = client.post(reverse("owner-method-new"), {"name": "X"})
    assert r.status_code == 403 and b"awaits staff approval" in r.content
    approve(user, django_capture_on_commit_callbacks)
    assert any("approved" in m.subject for m in mail.outbox if m.to == ["alice@lab.example"])

    method = register(client, {"name": "AliceFold", "argv": MFE_ARGV})
    assert method.owner == user and method.visibility == "development" and method.kind == "command"
    assert Prediction.objects.filter(method_version__method=method).count() == len(targets)
    assert run_all(method)["ok"] == len(targets)
    # the owner sees progress and scores
    page = client.get(reverse("owner-method", args=[method.pk])).content.decode()
    assert "development" in page and 'id="dataset-scores"' in page and "no score yet" not in page
    # the public sees nothing of it: pages, API, rankings
    anon = Client()
    assert anon.get(reverse("method-detail", args=[method.pk])).status_code == 404
    assert "AliceFold" not in anon.get(reverse("methods")).content.decode()
    assert "AliceFold" not in anon.get("/api/methods/").content.decode()
    assert "AliceFold" not in anon.get("/api/scores/").content.decode()
    subset = targets[0].dataset.subsets.get(slug="all")
    snap, _ = rank_subset(subset=subset, definition="extended")
    assert "AliceFold" not in {r["method"] for r in snap.report["methods"]}
    # publication: the owner asks, staff approve, the next ranking has it
    client.post(reverse("owner-method-action", args=[method.pk]), {"action": "publish"})
    method.refresh_from_db()
    assert method.publication_requested_at is not None and method.visibility == "development"
    staff = Client()
    staff.force_login(User.objects.get(username="staff-alice"))
    staff.post(
        reverse("admin:predictors_method_changelist"),
        {"action": "make_public", "_selected_action": [method.pk]},
    )
    method.refresh_from_db()
    assert method.visibility == "public"
    snap, new = rank_subset(subset=subset, definition="extended")
    assert new and "AliceFold" in {r["method"] for r in snap.report["methods"]}
    assert anon.get(reverse("method-detail", args=[method.pk])).status_code == 200


@pytest.fixture
def two_owners(client, targets):
    owners = []
    for name in ("bob", "carol"):
        user = User.objects.create_user(name, f"{name}@x.org", "pw")
        OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
        owners.append(user)
    spec = PredictorSpec(name="BobWeb", program="bobweb", version="1", argv=(), kind="web", endpoint=None)
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    Method.objects.filter(pk=version.method_id).update(owner=owners[0], visibility="development")
    for t in targets:
        Prediction.objects.create(method_version=version, target=t)
    return owners, Method.objects.get(pk=version.method_id)


def test_a_non_owner_can_neither_see_nor_act_on_a_development_method(two_owners, targets):
    (bob, carol), method = two_owners
    other = Client()
    other.force_login(carol)
    for name in ("owner-method", "owner-method-edit", "owner-method-compare"):
        assert other.get(reverse(name, args=[method.pk])).status_code == 404, name
    assert (
        other.post(reverse("owner-method-action", args=[method.pk]), {"action": "deactivate"}).status_code
        == 404
    )
    method.refresh_from_db()
    assert method.active
    _, key = ApiToken.issue(user=carol, name="carol")
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    for url in (
        f"/api/owner/methods/{method.pk}/",
        f"/api/owner/methods/{method.pk}/predictions/",
        f"/api/owner/methods/{method.pk}/scores/",
    ):
        assert api.get(url).status_code == 404, url
    assert "BobWeb" not in api.get("/api/owner/methods/").content.decode()
    assert "BobWeb" not in api.get("/api/methods/").content.decode()
    up = api.post(
        "/api/owner/predictions/",
        {"method": "BobWeb", "target": targets[0].pk, "structure": "((((....))))"},
        content_type="application/json",
    )
    assert up.status_code == 404
    assert not Prediction.objects.filter(method_version__method=method, status="ok").exists()
    # the owner, by token: sees it in the public API too, uploads, reads scores
    _, bob_key = ApiToken.issue(user=bob, name="bob")
    mine = Client(HTTP_AUTHORIZATION=f"Token {bob_key}")
    assert "BobWeb" in mine.get("/api/methods/").content.decode()
    up = mine.post(
        "/api/owner/predictions/",
        {"method": "BobWeb", "target": targets[0].pk, "structure": "((((....))))"},
        content_type="application/json",
    )
    assert up.status_code == 201 and up.json()["scores"]["extended"]["mcc"] == 1.0
    scores = mine.get(f"/api/owner/methods/{method.pk}/scores/").json()
    assert scores["count"] == 1
    assert "BobWeb" in mine.get("/api/scores/?method=BobWeb").content.decode()
    assert Client().get("/api/scores/?method=BobWeb").json()["results"] == []


def test_uploads_are_validated_with_a_clear_error_and_never_replace_a_final_outcome(two_owners, targets):
    (bob, _), method = two_owners
    _, key = ApiToken.issue(user=bob, name="bob")
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    t = targets[0]  # GGGGAAAACCCC, 12 nt

    def up(structure, fmt="dot-bracket", target=t.pk, **kw):
        return api.post(
            "/api/owner/predictions/",
            {"method": method.pk, "target": target, "format": fmt, "structure": structure, **kw},
            content_type="application/json",
        )

    cases = [
        (up("((((...))))"), "has length 11"),  # one short
        (up("((((....)))"), "never closed"),  # unbalanced
        (up([[1, 12], [2, 40]], fmt="pairs"), "12"),  # index outside the sequence
        (up([[1, 12], [1, 11]], fmt="pairs"), "position 1 is paired twice"),
        (
            up(
                "1 G 12\n2 G 0\n3 G 0\n4 G 0\n5 A 0\n6 A 0\n7 A 0\n8 A 0\n9 C 0\n10 C 0\n11 C 0\n12 A 1\n",
                fmt="bpseq",
            ),
            "position 12",
        ),  # BPSEQ of another sequence
        (up("((((....))))", fmt="fasta"), "format"),
        (up("((((....))))", probabilities=[[1, 12, 1.5]]), "probability"),
    ]
    for response, words in cases:
        assert response.status_code == 400, response.content
        assert words in response.content.decode(), (words, response.content)
    assert not Prediction.objects.filter(method_version__method=method, status="ok").exists()
    assert up("((((....))))").status_code == 201
    again = up("((((....))))")
    assert again.status_code == 409 and "never replaced" in again.json()["error"]
    # command methods take no uploads
    cmd = register_spec(
        spec=PredictorSpec(name="BobCmd", program="x", version="1", argv=("/bin/echo", "{sequence}")),
        from_catalogue=False,
    )
    Method.objects.filter(pk=cmd.method_id).update(owner=bob)
    r = api.post(
        "/api/owner/predictions/",
        {"method": "BobCmd", "target": t.pk, "structure": "((((....))))"},
        content_type="application/json",
    )
    assert r.status_code == 403 and "only web-service methods" in r.json()["error"]


def test_tokens_are_shown_once_and_revocable(client, two_owners):
    (bob, _), _method = two_owners
    client.force_login(bob)
    r = client.post(reverse("owner-tokens"), {"name": "uploads"})
    key = re.search(r'id="token-key">(crna_[^<]+)<', r.content.decode()).group(1)
    token = ApiToken.objects.get(user=bob)
    assert token.digest != key and key not in client.get(reverse("owner-tokens")).content.decode()
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/owner/methods/").status_code == 200
    client.post(reverse("owner-tokens"), {"revoke": token.pk})
    assert api.get("/api/owner/methods/").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Token crna_forged").get("/api/methods/").status_code == 401
    assert Client().get("/api/owner/methods/").status_code in (401, 403)


def test_web_service_method_end_to_end_with_callback_upload(client, targets, two_owners):
    (bob, _), _ = two_owners
    client.force_login(bob)
    with PredictorService(callbacks=True, callback_delay_s=0.0) as service:
        method = register(
            client,
            {"name": "BobAsync", "kind": "web", "endpoint": service.url + "/accept", "program": "bob-async"},
        )
        states = run_all(method)
        assert states["awaiting"] == len(targets)
        # the service's thread uploads through the callback URL it was given; here the test client plays it
        for path, body in service.requests:
            if path == "/accept" and body["id"] != "test":
                r = client.post(
                    "/api/owner/callback/",
                    {"structure": mfe(body["sequence"])},
                    content_type="application/json",
                    HTTP_AUTHORIZATION=f"Token {body['callback']['token']}",
                )
                assert r.status_code == 201, r.content
                assert body["callback"]["url"] == "http://testserver/api/owner/callback/"
    assert Prediction.objects.filter(
        method_version__method=method, status="ok", uploaded=True
    ).count() == len(targets)
    forged = callback_token(10**9)
    r = Client().post(
        "/api/owner/callback/",
        {"structure": "."},
        content_type="application/json",
        HTTP_AUTHORIZATION="Token " + forged[:-2] + "xx",
    )
    assert r.status_code == 401


def test_web_service_throttling_counts_running_and_recent_requests(two_owners, targets):
    _, method = two_owners
    spec = PredictorSpec(
        name="BobWeb",
        program="bobweb",
        version="1",
        argv=(),
        kind="web",
        endpoint="http://127.0.0.1:9/",
        max_concurrent=1,
        requests_per_minute=2,
    )
    preds = list(Prediction.objects.filter(method_version__method=method).order_by("pk"))
    assert throttle_delay(preds[0], spec) == 0
    Prediction.objects.filter(pk=preds[0].pk).update(status="running", started_at=timezone.now())
    assert throttle_delay(preds[1], spec) > 0  # one running, max 1
    Prediction.objects.filter(pk=preds[0].pk).update(status="ok")
    assert throttle_delay(preds[1], spec) == 0
    Prediction.objects.filter(pk=preds[1].pk).update(
        status="ok", started_at=timezone.now() - timedelta(seconds=10)
    )
    delay = throttle_delay(preds[2], spec)  # two started within the last minute, max 2/min
    assert 40 < delay < 52
