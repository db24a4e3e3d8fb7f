"""Accounts hardened (issue 26), through the real sign-in, sign-up and method pages (Django test client):
sign-in throttled per account and per address (the right password fails during a lockout), sign-up and
method-name answers that say nothing about other accounts, and method names of visible characters that
cannot pass for an existing name."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.owners.models import OwnerProfile
from predictors.core.spec import PredictorSpec
from predictors.models import Method
from predictors.services import register_spec

pytestmark = pytest.mark.django_db
PASSWORD = "a long passphrase 42"
LOCKED = "Too many failed sign-ins"


@pytest.fixture(autouse=True)
def fresh_counts(settings):
    settings.LOGIN_FAILURES_PER_ACCOUNT = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 12
    settings.LOGIN_LOCKOUT_S = 300
    cache.clear()
    yield
    cache.clear()


def sign_in(username: str, password: str, *, address: str = "203.0.113.7", url: str = "/account/login/"):
    client = Client(REMOTE_ADDR=address)
    r = client.post(url, {"username": username, "password": password})
    return r, "_auth_user_id" in client.session


def test_sign_in_is_locked_per_account_even_for_the_right_password_until_the_window_passes(settings):
    settings.LOGIN_LOCKOUT_S = 8  # each sign-in hashes a password (~0.3 s): the window must outlast six
    User.objects.create_user("bob", "bob@lab.example", PASSWORD)
    for k in range(5):
        r, ok = sign_in("bob", f"guess {k}")
        assert r.status_code == 200 and not ok and LOCKED not in r.content.decode()
    r, ok = sign_in("bob", PASSWORD)  # the right password, inside the lockout
    assert not ok and LOCKED in r.content.decode()
    r, ok = sign_in("BOB", PASSWORD, address="198.51.100.9")  # another address: the account is locked
    assert not ok and LOCKED in r.content.decode()
    time.sleep(8.5)
    r, ok = sign_in("bob", PASSWORD)
    assert ok and r.status_code == 302


def test_sign_in_is_locked_per_address_across_accounts_and_on_the_admin():
    User.objects.create_user("carol", "carol@lab.example", PASSWORD)
    User.objects.create_superuser("root", "root@x.org", PASSWORD)
    for k in range(12):  # one address guessing many (made-up) accounts, two tries each
        sign_in(f"user{k // 2}", "guess")
    r, ok = sign_in("carol", PASSWORD)
    assert not ok and LOCKED in r.content.decode()
    r, ok = sign_in("carol", PASSWORD, address="198.51.100.9")  # the account itself is not locked
    assert ok
    for k in range(5):
        sign_in("root", f"guess {k}", address="192.0.2.1", url="/admin/login/")
    r, ok = sign_in("root", PASSWORD, address="192.0.2.2", url="/admin/login/")
    assert not ok and LOCKED in r.content.decode()


def test_behind_a_trusted_proxy_the_forwarded_client_address_is_counted(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.2"]
    User.objects.create_user("dave", "dave@lab.example", PASSWORD)

    def via_proxy(username, password, client_address):
        client = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"198.51.100.1, {client_address}")
        client.post("/account/login/", {"username": username, "password": password})
        return "_auth_user_id" in client.session

    for k in range(12):
        via_proxy(f"user{k}", "guess", "203.0.113.50")
    assert not via_proxy("dave", PASSWORD, "203.0.113.50")  # that client's address is locked
    assert via_proxy("dave", PASSWORD, "203.0.113.51")  # not everyone behind the proxy


def test_sign_up_says_the_same_whether_the_address_has_an_account(django_capture_on_commit_callbacks):
    User.objects.create_user("alice", "alice@lab.example", PASSWORD)

    def sign_up(username: str, email: str):
        with django_capture_on_commit_callbacks(execute=True):
            return Client().post(
                reverse("owner-signup"),
                {"username": username, "email": email, "affiliation": "", "password1": PASSWORD,
                 "password2": PASSWORD},
            )

    fresh = sign_up("newcomer", "newcomer@lab.example")
    taken = sign_up("mallory", "ALICE@Lab.Example")  # the existing address, other case
    assert fresh.status_code == taken.status_code == 200
    assert b"signup-done" in fresh.content and b"signup-done" in taken.content
    assert b"exists" not in taken.content and b"sign in instead" not in taken.content
    assert not User.objects.filter(username="mallory").exists()  # no second account for the address
    told = [m for m in mail.outbox if m.to == ["alice@lab.example"]]
    assert len(told) == 1 and "already" in told[0].body  # the address's owner is told, nobody else


def approved(name: str) -> Client:
    user = User.objects.create_user(name, f"{name}@lab.example", PASSWORD)
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    client = Client()
    client.force_login(user)
    return client


def name_error(client: Client, name: str) -> str | None:
    """The registration page's answer about ``name`` (a test-run request of an otherwise valid spec)."""
    r = client.post(
        reverse("owner-method-new"),
        {"name": name, "kind": "web", "program": "p", "version": "1", "input": "single",
         "output_format": "dot-bracket", "argv": "", "output_file": "", "endpoint": "", "max_concurrent": 2,
         "requests_per_minute": 60, "retries": 1, "upload_window_h": 1, "max_length": 1000,
         "time_limit_s": 30, "memory_limit_mb": 1024, "test_sequence": "GGGGAAAACCCC", "tested": "",
         "trial": "", "image_archive": "", "_test": "1"},
    )
    errors = r.context["form"].errors.get("name")
    return " ".join(errors) if errors else None


def test_method_names_reveal_no_private_method_and_refuse_invisible_characters_and_look_alikes():
    carol = User.objects.create_user("carol", "carol@lab.example", PASSWORD)
    for name, owner, visibility in (("SecretFold", carol, "development"), ("RNAfold-MFE", None, "public")):
        spec = PredictorSpec(name=name, program="p", version="1", argv=(), kind="web", endpoint=None)
        version = register_spec(spec=spec, from_catalogue=owner is None, active=True)
        Method.objects.filter(pk=version.method_id).update(owner=owner, visibility=visibility)
    bob = approved("bob")
    public = name_error(bob, "RNAfold-MFE")
    # nothing says a private method exists: another owner's private name is as free as an unused one
    # (issue 36: a refusal beside the public list told it); the first made public keeps it
    assert public is not None and name_error(bob, "SecretFold") is None
    assert "RNAfold-MFE" not in public and "exists" not in public
    assert name_error(bob, "BobFold") is None
    assert "U+200B" in name_error(bob, "RNAfold-MFE\u200b")  # a zero-width space
    assert "U+2060" in name_error(bob, "Bob\u2060Fold")  # a word joiner
    for look_alike in ("RNAf\u043eld-MFE", "rnafold_mfe", "RNAfo1d MFE"):
        assert name_error(bob, look_alike) == public, look_alike
    for look_alike in ("secret-fold", "SECRETF0LD"):
        assert name_error(bob, look_alike) is None, look_alike
    assert name_error(bob, "Bob\u00a0Fold") is None  # NFKC: a no-break space is a space
