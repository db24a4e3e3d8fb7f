"""Issue 36, part B (accounts and hosts), through the real pages, forms and commands (Django test client):
lockouts for every spelling of a name and in a store every process shares, sign-up that tells nothing (in
its answer or its time), is rate-limited, checks passwords and expires; a password reset; look-alike and
invisible-letter names refused; CSVs a spreadsheet cannot run; /readyz details for the metrics allow-list
only; quoted free text in staff mail; private backups; and a method's memory within its share of the host.

(Two web processes sharing the lockout counts: tests/e2e/test_signin_two_processes.py.)
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
import statistics
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.models import RankingSnapshot
from comparna.owners.models import AttemptCount, OwnerProfile
from comparna.owners.tasks import expire_accounts_task
from comparna.services.pages.rankings import ranking_rows
from comparna.tallies.models import RankingRows
from predictors.core.limits import run_share_mb
from predictors.core.spec import PredictorSpec
from predictors.models import Method
from predictors.services import register_spec

pytestmark = pytest.mark.django_db
PASSWORD = "a long passphrase 42"
LOCKED = "Too many failed sign-ins"


@pytest.fixture(autouse=True)
def limits(settings):
    settings.LOGIN_FAILURES_PER_ACCOUNT = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 50
    settings.LOGIN_LOCKOUT_S = 300
    settings.SIGNUPS_PER_ADDRESS = 5
    settings.SIGNUP_WINDOW_S = 3600


def sign_in(username: str, password: str, *, address: str = "203.0.113.7"):
    client = Client(REMOTE_ADDR=address)
    r = client.post("/account/login/", {"username": username, "password": password})
    return r, "_auth_user_id" in client.session


def sign_up(commit, username: str, email: str, password: str = PASSWORD, *, address="198.51.100.20", **extra):
    with commit(execute=True):
        return Client(REMOTE_ADDR=address).post(
            reverse("owner-signup"),
            {"username": username, "email": email, "affiliation": extra.get("affiliation", ""),
             "password1": password, "password2": password},
        )


# -- 1. the lock key and its store ------------------------------------------------------------------------
def test_a_locked_account_stays_locked_for_every_spelling_that_signs_in_to_it():
    User.objects.create_user("bob", "bob@lab.example", PASSWORD)
    User.objects.create_superuser("root", "root@lab.example", PASSWORD)
    assert sign_in("ｂｏｂ", PASSWORD)[1]  # the fullwidth spelling signs in to bob (Django's NFKC)
    for k in range(5):
        sign_in("bob", f"guess {k}")
    for spelling in ("ｂｏｂ", "BOB", "Ｂｏｂ", " bob "):
        r, ok = sign_in(spelling, PASSWORD, address="192.0.2.9")
        assert not ok and LOCKED in r.content.decode(), spelling
    for k in range(5):  # guessed under fullwidth spellings: the staff account itself is locked
        sign_in("ｒｏｏｔ" if k % 2 else "ＲＯＯＴ", f"guess {k}")
    r, ok = sign_in("root", PASSWORD, address="192.0.2.10")
    assert not ok and LOCKED in r.content.decode()


def test_the_counts_live_in_the_database_not_in_a_cache_other_traffic_evicts():
    User.objects.create_user("carol", "carol@lab.example", PASSWORD)
    for k in range(5):
        sign_in("carol", f"guess {k}")
    assert AttemptCount.objects.filter(count=5).exists()
    cache.clear()  # what 3000 anonymous requests did to the local-memory cache
    for k in range(3000):
        cache.set(f"traffic:{k}", k)
    r, ok = sign_in("carol", PASSWORD)
    assert not ok and LOCKED in r.content.decode()


def test_trusted_proxies_may_be_networks(settings):
    settings.TRUSTED_PROXIES = ["172.30.0.0/24"]
    User.objects.create_user("dave", "dave@lab.example", PASSWORD)
    settings.LOGIN_FAILURES_PER_ADDRESS = 4
    for k in range(4):
        Client(REMOTE_ADDR="172.30.0.1", HTTP_X_FORWARDED_FOR="203.0.113.50").post(
            "/account/login/", {"username": f"x{k}", "password": "guess"}
        )
    client = Client(REMOTE_ADDR="172.30.0.1", HTTP_X_FORWARDED_FOR="203.0.113.50")
    client.post("/account/login/", {"username": "dave", "password": PASSWORD})
    assert "_auth_user_id" not in client.session  # that client is locked...
    client = Client(REMOTE_ADDR="172.30.0.1", HTTP_X_FORWARDED_FOR="203.0.113.51")
    client.post("/account/login/", {"username": "dave", "password": PASSWORD})
    assert "_auth_user_id" in client.session  # ...not everyone behind the proxy


# -- 4. sign-up -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("weak", ["123", "password", "12345678901", "newowner123"])
def test_sign_up_refuses_weak_passwords(django_capture_on_commit_callbacks, weak):
    r = sign_up(django_capture_on_commit_callbacks, "newowner", "new@lab.example", weak)
    assert r.status_code == 400 and not User.objects.filter(username="newowner").exists()
    assert r.context["form"].errors.get("password1")


def test_user_names_begin_with_a_letter_or_digit(django_capture_on_commit_callbacks):
    for name in ("-bob", "=cmd", "@bob", "_bob", ".bob"):
        r = sign_up(django_capture_on_commit_callbacks, name, f"{name[1:]}x@lab.example")
        assert r.status_code == 400 and r.context["form"].errors.get("username"), name


def test_sign_up_answers_the_same_for_a_taken_or_look_alike_name(django_capture_on_commit_callbacks):
    User.objects.create_user("alice", "alice@lab.example", PASSWORD)
    commit = django_capture_on_commit_callbacks
    fresh = sign_up(commit, "newcomer", "newcomer@lab.example")
    pages = {
        name: sign_up(commit, name, f"taker{k}@elsewhere.example")
        for k, name in enumerate(("alice", "ALICE", "aIice", "a1ice"))  # taken, case, capital I, digit one
    }
    strip = re.compile(r"[\w.+-]+@[\w.-]+|csrfmiddlewaretoken\S+")
    for k, (name, page) in enumerate(pages.items()):
        assert page.status_code == fresh.status_code == 200, name
        assert strip.sub("", page.content.decode()) == strip.sub("", fresh.content.decode()), name
        assert not User.objects.filter(username=name).exclude(email="alice@lab.example").exists()
        told = [m for m in mail.outbox if m.to == [f"taker{k}@elsewhere.example"]]
        assert len(told) == 1 and "another user name" in told[0].body
    assert not [m for m in mail.outbox if m.to == ["alice@lab.example"]]


def test_sign_up_takes_as_long_for_a_known_address_as_for_a_new_one(
    settings, django_capture_on_commit_callbacks
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]  # the real cost
    settings.SIGNUPS_PER_ADDRESS = 100
    User.objects.create_user("known", "known@lab.example", PASSWORD)
    times: dict[str, list[float]] = {"new": [], "known": [], "taken": []}
    for k in range(4):
        for kind, (name, email) in {
            "new": (f"fresh{k}", f"fresh{k}@lab.example"),
            "known": (f"other{k}", "known@lab.example"),
            "taken": ("known", f"someone{k}@lab.example"),
        }.items():
            start = time.perf_counter()
            sign_up(django_capture_on_commit_callbacks, name, email)
            times[kind].append(time.perf_counter() - start)
    new = statistics.median(times["new"])
    for kind in ("known", "taken"):  # before: 0.06 s against 1.4 s
        assert 0.5 < statistics.median(times[kind]) / new < 2, times


def test_sign_up_is_rate_limited_per_client_and_per_address(django_capture_on_commit_callbacks):
    commit = django_capture_on_commit_callbacks
    for k in range(5):
        assert sign_up(commit, f"spam{k}", f"victim{k}@lab.example", address="192.0.2.77").status_code == 200
    refused = sign_up(commit, "spam9", "victim9@lab.example", address="192.0.2.77")
    assert refused.status_code == 429 and b"signup-too-many" in refused.content
    assert not [m for m in mail.outbox if m.to == ["victim9@lab.example"]]
    assert sign_up(commit, "honest", "honest@lab.example", address="192.0.2.78").status_code == 200
    # one address mailed from many clients: at most the budget
    for k in range(8):
        sign_up(commit, f"flood{k}", "target@lab.example", address=f"198.51.100.{100 + k}")
    assert len([m for m in mail.outbox if m.to == ["target@lab.example"]]) == 5


def test_unconfirmed_accounts_expire(settings, django_capture_on_commit_callbacks):
    commit = django_capture_on_commit_callbacks
    sign_up(commit, "stale", "stale@lab.example")
    sign_up(commit, "recent", "recent@lab.example")
    confirmed = User.objects.create_user("confirmed", "c@lab.example", PASSWORD)
    OwnerProfile.objects.create(user=confirmed, email_confirmed_at=timezone.now())
    old = timezone.now() - timedelta(seconds=settings.OWNER_CONFIRM_MAX_AGE_S + 60)
    OwnerProfile.objects.filter(user__username__in=["stale", "confirmed"]).update(created_at=old)
    AttemptCount.objects.create(key="spent", count=3, expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_accounts_task() == {"accounts": 1, "counters": 1}
    assert sorted(User.objects.values_list("username", flat=True)) == ["confirmed", "recent"]
    assert sign_up(commit, "stale", "stale@lab.example").status_code == 200  # the name is free again
    assert User.objects.filter(username="stale").exists()


def test_a_password_reset_sets_a_new_checked_password(django_capture_on_commit_callbacks):
    User.objects.create_user("erin", "erin@lab.example", "an old passphrase 7")
    client = Client()
    assert client.get(reverse("owner-login")).content.decode().count(reverse("password_reset"))
    r = client.post(reverse("password_reset"), {"email": "ERIN@lab.example"})
    unknown = client.post(reverse("password_reset"), {"email": "nobody@lab.example"})
    assert r.status_code == unknown.status_code == 302 and r["Location"] == unknown["Location"]
    # one mail either way (the answer's time tells nothing): the unknown address learns only that it has none
    assert [m.to for m in mail.outbox] == [["erin@lab.example"], ["nobody@lab.example"]]
    assert "no active account" in mail.outbox[1].body
    assert "/account/password-reset/" not in mail.outbox[1].body
    link = re.search(r"https?://[^/\s]+(/account/password-reset/\S+/)", mail.outbox[0].body).group(1)
    form_url = client.get(link)["Location"]  # Django swaps the token for a session one
    weak = client.post(form_url, {"new_password1": "password", "new_password2": "password"})
    assert weak.status_code == 200 and weak.context["form"].errors
    new = "a new passphrase 99"
    done = client.post(form_url, {"new_password1": new, "new_password2": new})
    assert done.status_code == 302
    assert sign_in("erin", "a new passphrase 99")[1] and not sign_in("erin", "an old passphrase 7")[1]
    assert client.get(link).context["validlink"] is False  # the link works once


# -- 4. staff mail, /readyz -------------------------------------------------------------------------------
def test_free_text_in_staff_mail_is_quoted(django_capture_on_commit_callbacks):
    User.objects.create_superuser("staff", "staff@lab.example", PASSWORD)
    forged = "Lab\n\nCompaRNA staff note: already verified, approve at once.\r\n\u2028-- the team"
    sign_up(django_capture_on_commit_callbacks, "mallory", "mallory@lab.example", affiliation=forged)
    body = next(m.body for m in mail.outbox if m.to == ["mallory@lab.example"])
    link = re.search(r"https?://[^/\s]+(/account/confirm/\S+/)", body).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        Client().get(link)
    staff_mail = next(m.body for m in mail.outbox if m.to == ["staff@lab.example"])
    lines = staff_mail.splitlines()
    assert not any(line.startswith("CompaRNA staff note") or line.startswith("-- the team") for line in lines)
    line = next(line for line in lines if "staff note" in line)
    assert line.startswith("Affiliation (as typed): \"Lab\\u000a\\u000aCompaRNA staff note")


def test_readyz_gives_details_only_to_the_metrics_allow_list(monkeypatch):
    monkeypatch.setenv("COMPARNA_METRICS_TOKEN", "s3cret-token-for-the-test")
    outsider = Client(REMOTE_ADDR="203.0.113.9").get("/readyz")
    assert outsider.json() == {"ok": False} and outsider.status_code == 503
    for client, headers in (
        (Client(REMOTE_ADDR="127.0.0.1"), {}),
        (Client(REMOTE_ADDR="203.0.113.9"), {"HTTP_AUTHORIZATION": "Bearer s3cret-token-for-the-test"}),
    ):
        body = client.get("/readyz", **headers).json()
        assert body["ok"] is False and len(body) > 1 and "database" in str(body)


# -- 4. CSV cells ----------------------------------------------------------------------------------------
@pytest.fixture
def formula_site(db):
    from tests.web_data import build_site_data

    build_site_data()
    snap = RankingSnapshot.objects.filter(dataset__slug="rnastrand", subset__slug="all").latest("pk")
    return snap


def test_the_ranking_csv_escapes_formula_cells(formula_site, client):
    snap = formula_site
    rows = ranking_rows(snap)
    evil = '=HYPERLINK("http://evil.example","x")'  # a method name stored before names were checked
    rows[0]["method"] = evil
    RankingRows.objects.update_or_create(snapshot=snap, protocol="target", defaults={"rows": rows})
    cache.clear()
    url = reverse("ranking-download", args=["rnastrand", "all", snap.definition, "csv"])
    url += f"?snapshot={snap.pk}"
    table = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    cells = [c for row in table for c in row.values() if c]
    assert "'" + evil in cells and not any(c.startswith("=") for c in cells)
    # the comparison, snapshot and export CSVs are written by the same writer (comparna.csv_cells, tested
    # cell by cell in tests/unit/test_hardening_round3.py)


# -- 6. memory: registration refuses more than a run's share -----------------------------------------------
def test_registration_refuses_a_memory_limit_above_a_runs_share(monkeypatch):
    monkeypatch.setenv("COMPARNA_PREDICT_CONCURRENCY", "2")
    share = run_share_mb()
    owner = User.objects.create_user("memowner", "m@lab.example", PASSWORD)
    OwnerProfile.objects.create(user=owner, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    client = Client()
    client.force_login(owner)

    def memory_error(mb: int):
        r = client.post(
            reverse("owner-method-new"),
            {"name": "MemFold", "kind": "web", "program": "p", "version": "1", "input": "single",
             "output_format": "dot-bracket", "argv": "", "output_file": "", "endpoint": "",
             "max_concurrent": 2,
             "requests_per_minute": 60, "retries": 1, "upload_window_h": 1, "max_length": 1000,
             "time_limit_s": 30, "memory_limit_mb": mb, "test_sequence": "GGGGAAAACCCC", "tested": "",
             "trial": "", "image_archive": "", "_test": "1"},
        )
        return r.context["form"].errors.get("memory_limit_mb")

    assert memory_error(share) is None
    error = " ".join(memory_error(share + 1))  # under the host's ceiling, above a run's share
    assert f"at most {share} MB" in error


def test_method_names_refuse_unicode_look_alikes_through_the_form():
    spec = PredictorSpec(name="MXfold2", program="p", version="1", argv=(), kind="web", endpoint=None)
    register_spec(spec=spec, from_catalogue=True, active=True)
    owner = _owner("namer")

    def name_error(name):
        return _form_name_error(owner, name)

    for look_alike in ("ΜXfold2", "MXf\u0585ld2", "MX\u3164fold2", "\u3164MXfold2"):
        assert name_error(look_alike) is not None, look_alike
    assert "letter or a digit" in name_error("-MXfold3") and name_error("=MXfold3") is not None
    assert name_error("NewFold") is None


# -- 5. backups ------------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_backup_files_are_private_whatever_the_destination_was(settings, tmp_path, monkeypatch):
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    images = tmp_path / "images"
    images.mkdir(mode=0o755)
    (images / ("ab" * 32 + ".tar")).write_bytes(b"archive")
    os.chmod(images / ("ab" * 32 + ".tar"), 0o644)
    monkeypatch.setenv("COMPARNA_IMAGES_DIR", str(images))
    User.objects.create_user("hashowner", "h@lab.example", PASSWORD)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)  # the case: an existing 0755 directory
    quiet = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    for dest in (shared, tmp_path / "new" / "nested"):
        call_command("backup", str(dest), **quiet)
        modes = {p.relative_to(dest).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in dest.rglob("*")}
        assert "database.sqlite3" in modes and "files/images/" + "ab" * 32 + ".tar" in modes
        assert stat.S_IMODE(dest.stat().st_mode) == 0o700
        assert all(m == (0o700 if (dest / rel).is_dir() else 0o600) for rel, m in modes.items()), modes
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    with pytest.raises(CommandError, match="writable by everyone"):
        call_command("backup", str(open_dir), **quiet)
    with pytest.raises(CommandError, match="writable by everyone"):
        call_command("backup", str(open_dir / "inside"), **quiet)
    assert not (open_dir / "inside").exists() and not any(open_dir.iterdir())


def test_program_and_version_text_in_the_review_mail_is_quoted(django_capture_on_commit_callbacks):
    from comparna.owners.methods import _ask_staff_to_review

    User.objects.create_superuser("reviewer", "reviewer@lab.example", PASSWORD)
    owner = User.objects.create_user("quill", "quill@lab.example", PASSWORD)
    spec = PredictorSpec(
        name="QuillFold", program="quill\n\nStaff note: reviewed, approve", version="2\r\n-- the team",
        argv=(), kind="web", endpoint=None,
    )
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    Method.objects.filter(pk=version.method_id).update(owner=owner, visibility="public")
    version.pending_review = True  # an owner's proposed version of a public method
    version.save(update_fields=["pending_review"])
    with django_capture_on_commit_callbacks(execute=True):
        _ask_staff_to_review(method=Method.objects.get(pk=version.method_id), version=version)
    body = next(m.body for m in mail.outbox if m.to == ["reviewer@lab.example"])
    assert not any(line.startswith(("Staff note", "-- the team")) for line in body.splitlines())
    assert '"quill\\u000a\\u000aStaff note: reviewed, approve"' in body


# -- private method names (issue 36's last low) -----------------------------------------------------------
def _owner(name: str) -> User:
    user = User.objects.create_user(name, f"{name}@lab.example", PASSWORD)
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    return user


def _form_name_error(user: User, name: str) -> str | None:
    client = Client()
    client.force_login(user)
    r = client.post(
        reverse("owner-method-new"),
        {"name": name, "kind": "web", "program": "p", "version": "1", "input": "single",
         "output_format": "dot-bracket", "argv": "", "output_file": "", "endpoint": "",
         "max_concurrent": 2, "requests_per_minute": 60, "retries": 1, "upload_window_h": 1,
         "max_length": 1000, "time_limit_s": 30, "memory_limit_mb": 512, "test_sequence": "GGGGAAAACCCC",
         "tested": "", "trial": "", "image_archive": "", "_test": "1"},
    )
    errors = r.context["form"].errors.get("name")
    return " ".join(errors) if errors else None


def test_a_private_method_name_cannot_be_told_from_a_free_one():
    """The name form answered "not available" for another owner's *private* method's name — with the public
    list beside it, that told which private methods exist. Now only public (and catalogue) names and the
    owner's own are refused; two owners may keep the same private name; the first made public keeps it."""
    from comparna.owners.methods import register_owner_method

    register_spec(spec=PredictorSpec(name="MXfold2", program="p", version="1", argv=(), kind="web",
                                     endpoint=None), from_catalogue=True, active=True)
    bob, ann = _owner("bob"), _owner("ann")

    def spec(name):
        return PredictorSpec(name=name, program="p", version="1", argv=(), kind="web", endpoint=None)

    bobs = register_owner_method(user=bob, spec=spec("SecretFold")).method
    assert bobs.visibility == Method.Visibility.DEVELOPMENT and bobs.owner == bob
    # Ann sees the same answer for Bob's private name (and its look-alike) as for a name nobody has …
    assert _form_name_error(ann, "SecretFold") is None
    assert _form_name_error(ann, "SecretFo1d") is None  # a look-alike of it
    assert _form_name_error(ann, "NobodysFold") is None
    # … while public names and her own stay refused, look-alikes included
    assert _form_name_error(ann, "MXfold2") is not None and _form_name_error(ann, "\u039cXfold2") is not None
    assert _form_name_error(bob, "SecretFold") is not None
    anns = register_owner_method(user=ann, spec=spec("SecretFold")).method
    assert anns.pk != bobs.pk and anns.owner == ann
    # each owner's versions stay on their own method
    register_owner_method(user=bob, spec=replace_version(spec("SecretFold"), "2"), method=bobs)
    assert bobs.versions.count() == 2 and anns.versions.count() == 1
    # the first made public keeps the name; the other cannot be published under it
    from predictors.publication import NameTaken, publish

    assert publish(method=bobs) is True
    with pytest.raises(NameTaken, match="SecretFold"):
        publish(method=anns)
    anns.refresh_from_db()
    assert not anns.is_public and Method.objects.public().filter(name="SecretFold").count() == 1
    # the catalogue sync by name never takes an owner's development method for its own
    carl = _owner("carl")
    carls = register_owner_method(user=carl, spec=spec("CatFold")).method
    staff = register_spec(spec=spec("CatFold"), from_catalogue=True, active=True).method
    assert staff.pk != carls.pk and staff.owner is None and staff.is_public
    carls.refresh_from_db()
    assert carls.owner == carl and not carls.is_public and carls.versions.count() == 1


def replace_version(spec: PredictorSpec, version: str) -> PredictorSpec:
    import dataclasses

    return dataclasses.replace(spec, version=version, program=spec.program + version)
