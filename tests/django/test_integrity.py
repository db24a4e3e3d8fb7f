"""Integrity of what is ranked (issue 26), through the real pages and APIs (Django test client), the admin,
the ranking service and a snapshot archive read back.

An owner who uploads a target's public reference gets a perfect score that only they see, marked
self-reported; nothing public (pages, API answers, rankings, comparisons, family pages, snapshots) has it.
A published method's owner who changes what runs makes a private version that staff must approve; the
approved version stays ranked meanwhile.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.blind import prerelease
from comparna.blind.models import BlindTarget, BlindWeek
from comparna.models import RankingSnapshot, Target
from comparna.owners.models import ApiToken, OwnerProfile
from comparna.services.pages.methods import refresh_method_summaries
from comparna.services.rankings import rank_subset, recompute_rankings
from comparna.services.scoring import score_prediction
from comparna.snapshots.archive import iter_members
from comparna.snapshots.lifecycle import make_snapshot_if_changed, snapshot_path
from predictors.core.spec import PredictorSpec
from predictors.forms import TEST_SEQUENCE
from predictors.models import Method, MethodVersion, Prediction, TrialRun
from predictors.services import execute_prediction, register_spec
from predictors.trials import execute_test_run
from tests.factories import make_dataset, make_method_version, make_prediction, make_target

pytestmark = pytest.mark.django_db

REFERENCES = [
    ("GGGGAAAACCCC", "((((....))))"),
    ("GGGAAAUCCCGCGAAAGCG", "(((....)))((....))."),
    ("GGGCGAAAGCCCAAAGGGCGAAAGCCCA", "(((((...)))))..(((((...)))))"),
    ("GCGCAAAAGCGCAAAAGCGCAAAAGCGC", "((((....))))....((((....))))"),
]


def approved_owner(name: str) -> tuple[User, Client]:
    user = User.objects.create_user(name, f"{name}@lab.example", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    _, key = ApiToken.issue(user=user, name=name)
    return user, Client(HTTP_AUTHORIZATION=f"Token {key}")


def staff_client() -> Client:
    staff, _ = User.objects.get_or_create(
        username="staff", defaults={"email": "staff@x.org", "is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(staff)
    return client


def web_method(name: str, owner: User) -> Method:
    """An upload-only web-service method of ``owner``, published by staff."""
    spec = PredictorSpec(name=name, program=name.lower(), version="1", argv=(), kind="web", endpoint=None)
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    Method.objects.filter(pk=version.method_id).update(owner=owner, visibility="development")
    method = Method.objects.get(pk=version.method_id)
    r = staff_client().post(
        reverse("admin:predictors_method_changelist"),
        {"action": "make_public", "_selected_action": [method.pk]},
    )
    assert r.status_code == 302
    method.refresh_from_db()
    assert method.is_public
    return method


@pytest.fixture
def site(settings, tmp_path):
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    ds = make_dataset("strand")
    targets = [make_target(seq, db, dataset=ds) for seq, db in REFERENCES]
    other = make_method_version("OtherFold")  # a catalogue method CompaRNA ran
    for t in targets:
        score_prediction(prediction=make_prediction(other, t, "." * t.length))
    return ds, targets, other.method


def body_of(response) -> str:
    return (b"".join(response.streaming_content) if response.streaming else response.content).decode()


def test_an_uploaded_reference_is_self_reported_seen_by_its_owner_and_nowhere_public(site):
    ds, targets, other = site
    bob, bob_api = approved_owner("bob")
    method = web_method("BobWeb", bob)
    anon = Client()
    # the attack: read each target's reference from the public API and upload it as a prediction
    for t in targets:
        ref = anon.get(f"/api/targets/{t.pk}/").json()["references"][0]
        r = bob_api.post(
            "/api/owner/predictions/",
            {"method": "BobWeb", "target": t.pk, "format": "pairs", "structure": ref["pairs"]},
            content_type="application/json",
        )
        assert r.status_code == 201, r.content
        assert r.json()["scores"]["extended"]["mcc"] == 1.0  # the owner sees the score it got,
        assert r.json()["self_reported"] is True  # and that it is self-reported

    # nothing public has it: score and prediction lists, the target pages, the method's own pages
    for t in targets:
        scores = anon.get(f"/api/scores/?target={t.pk}").json()["results"]
        assert [s["method"] for s in scores] == ["OtherFold"], scores
        assert "BobWeb" not in body_of(anon.get(f"/targets/{t.pk}/"))
    assert anon.get("/api/scores/?method=BobWeb").json()["results"] == []
    assert anon.get("/api/scores/?method=BobWeb&current=false").json()["results"] == []
    assert anon.get("/api/predictions/?method=BobWeb").json()["results"] == []
    refresh_method_summaries()  # the method page's figures, computed in the background
    page = body_of(anon.get(reverse("method-detail", args=[method.pk])))
    assert 'id="origins"' in page
    assert "4 uploaded by its owner for a target whose reference was public" in page
    assert "No scored prediction yet." in page and "perf-length" not in page
    listing = body_of(anon.get(reverse("method-predictions", args=[method.pk])))
    assert all(t.source_id not in listing for t in targets)
    status = anon.get("/methods/BobWeb/status/").context
    assert ("ok", 0) in [(s, n) for _, s, n in status["counts"]] and status["total"] == 0

    # rankings, comparisons and the family page: computed from public scores only
    recompute_rankings(dataset=ds)
    reports = list(RankingSnapshot.objects.filter(dataset=ds).values_list("report", flat=True))
    assert reports and all("BobWeb" not in {r["method"] for r in rep["methods"]} for rep in reports)
    base = f"/rankings/{ds.slug}/all/extended/"
    rows = list(csv.reader(io.StringIO(body_of(anon.get(f"{base}compare/{method.pk}/{other.pk}/data.csv")))))
    assert len(rows) == 1, rows  # the header only: no common scored target
    assert "BobWeb" not in body_of(anon.get(reverse("families", args=[ds.slug, "extended"])))

    # snapshot: the archive has no prediction, score or method record of it
    snap = make_snapshot_if_changed(ds, background=False)
    files = {name: fh.read() for name, fh in iter_members(snapshot_path(snap))}
    assert {m["name"] for m in json.loads(files[next(n for n in files if n.endswith("methods.json"))])} == {
        "OtherFold"
    }
    for name, data in files.items():
        assert b"BobWeb" not in data, name

    # the owner sees every one of them, marked self-reported (API and page)
    owner = Client()
    owner.force_login(bob)
    mine = bob_api.get(f"/api/owner/methods/{method.pk}/predictions/").json()["results"]
    assert len(mine) == 4 and all(p["self_reported"] and p["status"] == "ok" for p in mine)
    assert len(bob_api.get("/api/scores/?method=BobWeb").json()["results"]) == 4  # their own, by the API
    assert all(s["self_reported"] for s in bob_api.get("/api/scores/?method=BobWeb").json()["results"])
    page = body_of(owner.get(reverse("owner-method", args=[method.pk])))
    assert page.count('<span class="tag self-reported">self-reported</span>') == 4
    assert "(4 self-reported)" in page


def at(settings, moment: dt.datetime) -> None:
    settings.CLOCK = f"{moment:%Y-%m-%dT%H:%M:%S}Z@{time.time():.3f}x1"


def test_an_upload_counts_only_for_a_blind_target_before_its_release(settings, site):
    release = dt.date(2024, 1, 10)
    deadline = dt.datetime(2024, 1, 9, 22, 0, tzinfo=dt.UTC)
    at(settings, deadline - dt.timedelta(days=2))
    week = prerelease.ensure_week(release)
    week.status = BlindWeek.Status.OPEN
    week.save()
    seq = "GGGAAAUCCCGCGAAAGCGAAAGGGAAACCCUUUCGCGAAAGCGCC"
    blind = []
    for k in (1, 2):
        target = Target.objects.create(
            dataset=prerelease.ensure_blind_dataset(), source_id=f"9AB{k}_1", sequence=seq, length=len(seq)
        )
        BlindTarget.objects.create(week=week, target=target, pdb_id=f"9AB{k}", entity_id="1", announced=seq)
        blind.append(target)
    bob, bob_api = approved_owner("bob")
    web_method("BobWeb", bob)

    def submit(target):
        return bob_api.post(
            "/api/blind/predictions/",
            {"method": "BobWeb", "target": target.pk, "format": "dot-bracket", "structure": "." * len(seq)},
            content_type="application/json",
        )

    r = submit(blind[0])  # before the release: nobody knows the structure, the upload counts
    assert r.status_code == 201, r.content
    assert Prediction.objects.get(pk=r.json()["prediction"]).self_reported is False
    at(settings, dt.datetime(2024, 1, 10, 1, 0, tzinfo=dt.UTC))  # after the release: the reference is out
    r = submit(blind[1])
    assert r.status_code == 201, r.content
    assert Prediction.objects.get(pk=r.json()["prediction"]).self_reported is True


MFE_ARGV = '["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"]'
MEA_ARGV = '["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mea", "{fasta}"]'


def save_through_the_page(client: Client, data: dict, *, method: Method | None = None) -> None:
    """The owner's registration page: test run (executed here as the worker would), check, save."""
    base = {
        "name": "", "kind": "command", "program": "p", "version": "1", "input": "single",
        "output_format": "dot-bracket", "argv": "", "output_file": "", "endpoint": "", "max_concurrent": 2,
        "requests_per_minute": 60, "retries": 1, "upload_window_h": 1, "max_length": 1000,
        "time_limit_s": 30, "memory_limit_mb": 1024, "test_sequence": TEST_SEQUENCE, "tested": "",
        "trial": "", "image_archive": "",
    }
    base.update(data)
    url = reverse("owner-method-edit", args=[method.pk]) if method else reverse("owner-method-new")
    r = client.post(url, {**base, "_test": "1"})
    assert r.status_code == 200, r.content.decode()[:3000]
    trial = TrialRun.objects.filter(requested_by=r.wsgi_request.user).order_by("-created_at").first()
    execute_test_run(trial_id=trial.pk)
    r = client.post(url, {**base, "trial": str(trial.pk), "_check": "1"})
    tested = r.context["form"].data["tested"]
    assert tested, TrialRun.objects.get(pk=trial.pk).result
    r = client.post(url, {**base, "trial": str(trial.pk), "tested": tested, "_save": "1"})
    assert r.status_code == 302, r.content.decode()[:3000]


def run_queued(method: Method) -> None:
    for p in Prediction.objects.filter(method_version__method=method, status="queued"):
        execute_prediction(prediction_id=p.pk)


def test_a_published_methods_new_program_stays_private_until_staff_approve_it(
    site, django_capture_on_commit_callbacks
):
    ds, targets, _ = site
    subset = ds.subsets.get(slug="all")
    bob, _ = approved_owner("bob")
    owner = Client()
    owner.force_login(bob)
    staff = staff_client()
    save_through_the_page(owner, {"name": "BobFold", "program": "bobfold", "argv": MFE_ARGV})
    method = Method.objects.get(name="BobFold")
    run_queued(method)
    staff.post(reverse("admin:predictors_method_changelist"),
               {"action": "make_public", "_selected_action": [method.pk]})
    method.refresh_from_db()
    approved = method.current_version
    assert method.is_public
    snap, _ = rank_subset(subset=subset, definition="extended")
    assert snap.inputs["methods"]["BobFold"] == approved.fingerprint

    # the owner changes what runs: a new version, private, while the approved one stays current and ranked
    with django_capture_on_commit_callbacks(execute=True):
        save_through_the_page(
            owner,
            {"name": "BobFold", "program": "bobfold", "argv": MEA_ARGV, "output_format": "pairs-json"},
            method=method,
        )
    method.refresh_from_db()
    assert method.is_public and method.current_version == approved
    pending = method.pending_version
    assert pending is not None and pending.fingerprint != approved.fingerprint and not pending.is_current
    assert any("New version to review: BobFold" in m.subject for m in mail.outbox)
    run_queued(method)
    assert pending.predictions.filter(status="ok").count() == len(targets)  # it runs, for its owner
    snap, _ = rank_subset(subset=subset, definition="extended")
    assert snap.inputs["methods"]["BobFold"] == approved.fingerprint
    anon = Client()
    api = anon.get(f"/api/methods/{method.pk}/").json()
    assert [v["fingerprint"] for v in api["versions"]] == [approved.fingerprint]
    assert "--mode mea" not in body_of(anon.get(reverse("method-detail", args=[method.pk])))
    assert anon.get("/methods/BobFold/status/").context["older"] == []
    assert [v for v, _ in owner.get("/methods/BobFold/status/").context["older"]] == [pending]
    page = body_of(owner.get(reverse("owner-method", args=[method.pk])))
    assert 'id="pending-review"' in page and "mea" in page
    assert owner.get(f"/api/owner/methods/{method.pk}/").json()["version"]["pending_review"] is True

    # staff see it waiting, and approve it with the same action: it becomes current and is ranked from then on
    assert pending.fingerprint[:12] in body_of(staff.get(reverse("admin:predictors_method_changelist")))
    r = staff.post(reverse("admin:predictors_method_changelist"),
                   {"action": "make_public", "_selected_action": [method.pk]})
    assert r.status_code == 302
    method.refresh_from_db()
    assert method.current_version == pending and method.pending_version is None
    snap, new = rank_subset(subset=subset, definition="extended")
    assert new and snap.inputs["methods"]["BobFold"] == pending.fingerprint
    assert MethodVersion.objects.filter(method=method, pending_review=True).count() == 0
