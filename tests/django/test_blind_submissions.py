"""External predictors in the blind track: an owner reads the week's targets from the API and submits a
public web-service method's structures with an owner token before the deadline (frozen at once, receipt with
the committed hash); a submission after the deadline is stored and frozen as late and never ranked; bad or
foreign submissions change nothing."""

from __future__ import annotations

import datetime as dt
import time

import pytest
import RNA
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from comparna.blind import freezing, prerelease, rankings
from comparna.blind.models import BlindRanking, BlindTarget, BlindWeek, FrozenPrediction
from comparna.blind.scoring import score_unscored
from comparna.models import Target
from comparna.owners.models import ApiToken, OwnerProfile
from comparna.rna.formats import parse_dot_bracket
from predictors.core.spec import PredictorSpec
from predictors.models import Method, Prediction
from predictors.services import register_spec
from tests.factories import make_dataset, make_target

pytestmark = pytest.mark.django_db

UTC = dt.UTC
RELEASE = dt.date(2024, 1, 10)
DEADLINE = dt.datetime(2024, 1, 9, 22, 0, tzinfo=UTC)
SEQUENCE = "GGGAAAUCCCGCGAAAGCGAAAGGGAAACCCUUUCGCGAAAGCGCC"  # 46 nt


def at(settings, moment: dt.datetime) -> None:
    settings.CLOCK = f"{moment:%Y-%m-%dT%H:%M:%S}Z@{time.time():.3f}x1"


def web_method(name: str, owner: User, visibility: str = "public") -> Method:
    spec = PredictorSpec(name=name, program=name.lower(), version="1", argv=(), kind="web", endpoint=None)
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    Method.objects.filter(pk=version.method_id).update(owner=owner, visibility=visibility)
    return Method.objects.get(pk=version.method_id)


def owner(name: str) -> tuple[User, Client]:
    user = User.objects.create_user(name, f"{name}@x.org", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    _, key = ApiToken.issue(user=user, name=name)
    return user, Client(HTTP_AUTHORIZATION=f"Token {key}")


@pytest.fixture
def week(settings):
    at(settings, DEADLINE - dt.timedelta(days=2))
    week = prerelease.ensure_week(RELEASE)
    week.status = BlindWeek.Status.OPEN
    week.save()
    target = Target.objects.create(  # a blind target has no structure before the release
        dataset=prerelease.ensure_blind_dataset(), source_id="9ABC_1", sequence=SEQUENCE, length=len(SEQUENCE)
    )
    BlindTarget.objects.create(week=week, target=target, pdb_id="9ABC", entity_id="1", announced=SEQUENCE)
    return week, target


def submit(api: Client, method, target, structure, fmt="dot-bracket"):
    return api.post(
        "/api/blind/predictions/",
        {"method": method, "target": target, "format": fmt, "structure": structure},
        content_type="application/json",
    )


def test_owners_submit_blind_on_time_late_ones_are_stored_never_ranked(settings, week, tmp_path, capsys):
    week, target = week
    bob, bob_api = owner("bob")
    carol, carol_api = owner("carol")
    web_method("BobServer", bob)
    carol_web = web_method("CarolServer", carol)
    dev = web_method("BobDraft", bob, visibility="development")
    mfe = RNA.fold(SEQUENCE)[0]

    index = Client().get("/blind/").content.decode()  # the timeline says how to take part, and until when
    assert "Tuesday 22:00 (deadline)" in index and "POST /api/blind/predictions/" in index
    listing = Client().get("/api/blind/weeks/").json()  # anyone: what to predict, until when
    [w] = listing["weeks"]
    assert w["release_date"] == str(RELEASE) and w["accepting"] is True
    assert w["deadline"].startswith("2024-01-09T22:00")
    assert [(t["id"], t["sequence"]) for t in w["targets"]] == [(target.pk, SEQUENCE)]

    # refused, and nothing stored: no token, someone else's method, not a blind target, a development
    # method, a structure of the wrong length
    assert Client().post("/api/blind/predictions/", {}, content_type="application/json").status_code in (
        401, 403,
    )
    assert submit(carol_api, "BobServer", target.pk, mfe).status_code == 404
    other = make_target("GGGGAAAACCCC", "((((....))))", dataset=make_dataset("strand"))
    r = submit(bob_api, "BobServer", other.pk, "((((....))))")
    assert r.status_code == 404 and "blind target" in r.json()["detail"]
    r = submit(bob_api, dev.pk, target.pk, mfe)
    assert r.status_code == 403 and "development method" in r.json()["error"]
    r = submit(bob_api, "BobServer", target.pk, mfe[:-1])
    assert r.status_code == 400 and "46 nt" in r.json()["error"]
    assert not Prediction.objects.filter(target=target).exists()
    assert not FrozenPrediction.objects.exists()

    # on time: stored, frozen at once; the receipt's hash is the one committed at the deadline
    r = submit(bob_api, "BobServer", target.pk, mfe)
    assert r.status_code == 201, r.content
    receipt = r.json()
    assert receipt["late"] is False and receipt["week"] == str(RELEASE)
    frozen = FrozenPrediction.objects.get(prediction_id=receipt["prediction"])
    assert frozen.sha256 == receipt["sha256"] == freezing.digest(frozen.content)
    assert frozen.content["pairs"] == Prediction.objects.get(pk=receipt["prediction"]).pairs
    again = submit(bob_api, "BobServer", target.pk, "." * len(SEQUENCE))
    assert again.status_code == 409  # never replaced
    assert FrozenPrediction.objects.get(pk=frozen.pk).sha256 == receipt["sha256"]

    # after the deadline: accepted, stored, frozen as late
    at(settings, DEADLINE + dt.timedelta(minutes=3))
    assert Client().get("/api/blind/weeks/").json()["weeks"][0]["accepting"] is False
    r = submit(carol_api, carol_web.pk, target.pk, mfe)
    assert r.status_code == 201 and r.json()["late"] is True
    late = FrozenPrediction.objects.get(prediction_id=r.json()["prediction"])
    assert late.late and not late.committed

    assert freezing.commit_week(week)
    week.refresh_from_db()
    lines = freezing.parse_commitment(week.commitment)
    assert [(row["method"], row["sha256"]) for row in lines] == [("BobServer", receipt["sha256"])]
    assert freezing.verify_week(week).ok
    # anyone's copy of the commitment, kept from before the release, is checked as it is
    copy = tmp_path / "commitment.tsv"
    copy.write_text(week.commitment)
    call_command("verify_blind", "--week", str(RELEASE), "--commitment", str(copy))
    assert f"week {RELEASE}: OK: 1 of 1 committed predictions match their hash" in capsys.readouterr().out
    copy.write_text(week.commitment.replace(receipt["sha256"], "0" * 64))
    with pytest.raises(SystemExit) as failed:
        call_command("verify_blind", "--week", str(RELEASE), "--commitment", str(copy))
    out = capsys.readouterr().out
    assert failed.value.code == 1 and "does not match its published SHA-256" in out
    assert f"prediction {receipt['prediction']} (BobServer on 9ABC_1): the stored hash differs" in out
    page = Client().get(f"/blind/{RELEASE}/").content.decode()
    assert "BobServer" in page and "CarolServer" in page and "BobDraft" not in page

    # after the release the target is linked (as release.link_released would) and scored: both are
    # scored, only the committed one is ranked
    at(settings, DEADLINE + dt.timedelta(days=1))
    structure = parse_dot_bracket(mfe, length=len(SEQUENCE))
    BlindTarget.objects.filter(target=target).update(
        state=BlindTarget.State.SCORED, chain_id="A", identity=1.0, window=[[1, len(SEQUENCE)]],
        reference={d: [list(p) for p in sorted(structure.pairs)] for d in ("standard", "extended")},
    )
    assert score_unscored() == 2
    rankings.rank_blind()
    ranking = BlindRanking.objects.get(scope=str(RELEASE), definition="standard")
    assert set(ranking.inputs["methods"]) == {"BobServer"}
    assert [row["method"] for row in ranking.report["methods"]] == ["BobServer"]
    assert late.scores.filter(definition="standard").get().values["mcc"] == 1.0  # scored, shown, not ranked
