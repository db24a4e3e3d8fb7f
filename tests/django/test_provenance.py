"""Provenance of every ranked result (issue 36), through the pages and the API.

A catalogue method's result is "run by CompaRNA from reviewed code"; an owner's command "owner's program run
by CompaRNA" and, on a target whose reference was public before its version was registered, "not blind"; a
web service's answer for a target whose reference is public is self-reported (never public or ranked), while
its answer for a blind target before the release counts. The ranking pages say which rankings no owner can
game.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.blind import prerelease
from comparna.blind.models import BlindTarget, BlindWeek
from comparna.models import Subset, Target
from comparna.owners.methods import register_owner_method
from comparna.owners.models import OwnerProfile
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from ingest.services.pdb import ensure_pdb_dataset
from predictors.core.spec import PredictorSpec
from predictors.models import Method, Prediction
from predictors.publication import publish
from predictors.services import execute_prediction, register_spec
from tests.factories import make_dataset, make_method_version, make_prediction, make_target
from tests.support.local_predictor_service import PredictorService

pytestmark = pytest.mark.django_db

SEQ = "GGGGAAACCCCAAAGGGGAAAACCCCAAAAGGGA"
DB = "((((...))))...((((....))))........"


@pytest.fixture
def site():
    strand = make_dataset("strand")
    static = [make_target(SEQ, DB, dataset=strand) for _ in range(16)]
    pdb = ensure_pdb_dataset()
    future = timezone.now().date() + dt.timedelta(days=30)  # released after any version here was registered
    fresh = make_target(SEQ, DB, dataset=pdb)
    Target.objects.filter(pk=fresh.pk).update(release_date=future)
    old = make_target(SEQ, DB, dataset=pdb)
    Target.objects.filter(pk=old.pk).update(release_date=dt.date(2020, 1, 1))
    catalogue = make_method_version("CatFold")
    bob = User.objects.create_user("bob", "bob@lab.example", "pw")
    OwnerProfile.objects.create(user=bob, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    spec = PredictorSpec(name="BobFold", program="bobfold", version="1", argv=("/bin/echo", "{sequence}"))
    owned = register_owner_method(user=bob, spec=spec)
    assert publish(method=owned.method)
    for t in Target.objects.all():
        for version in (catalogue, owned):
            Prediction.objects.filter(method_version=version, target=t).delete()  # queued by registration
            score_prediction(prediction=make_prediction(version, t, DB))
    return {"static": static, "fresh": Target.objects.get(pk=fresh.pk), "old": Target.objects.get(pk=old.pk),
            "catalogue": catalogue, "owned": owned, "bob": bob, "strand": strand, "pdb": pdb}


def api_rows(target: Target) -> dict[str, dict]:
    rows = Client().get(f"/api/predictions/?target={target.pk}").json()["results"]
    return {r["method"]: r for r in rows}


def test_each_result_says_where_it_came_from_and_whether_it_is_blind(site):
    static = api_rows(site["static"][0])
    assert (static["CatFold"]["provenance"], static["CatFold"]["not_blind"]) == ("catalogue", False)
    assert (static["BobFold"]["provenance"], static["BobFold"]["not_blind"]) == ("program", True)
    old, fresh = api_rows(site["old"]), api_rows(site["fresh"])
    assert old["BobFold"]["not_blind"] is True  # released before the version was registered
    assert fresh["BobFold"]["not_blind"] is False  # released after: its program could not know it
    scores = Client().get(f"/api/scores/?target={site['static'][0].pk}").json()["results"]
    assert {(s["method"], s["provenance"], s["not_blind"]) for s in scores} == {
        ("CatFold", "catalogue", False), ("BobFold", "program", True)}

    page = Client().get(reverse("target-detail", args=[site["static"][0].pk])).content.decode()
    assert 'data-provenance="catalogue"' in page and 'data-provenance="program"' in page
    assert page.count('class="tag not-blind"') == 1  # BobFold's row
    fresh_page = Client().get(reverse("target-detail", args=[site["fresh"].pk])).content.decode()
    assert 'data-provenance="program"' in fresh_page and "not-blind" not in fresh_page

    method_page = Client().get(reverse("method-detail", args=[site["owned"].method_id])).content.decode()
    assert 'id="provenance"' in method_page and "owner&#x27;s program run by CompaRNA" in method_page
    cat_page = Client().get(reverse("method-detail", args=[site["catalogue"].method_id])).content.decode()
    assert "run by CompaRNA from reviewed code" in cat_page


def test_ranking_rows_carry_provenance_and_the_pages_say_which_rankings_cannot_be_gamed(site):
    rank_subset(subset=Subset.objects.get(dataset=site["strand"], slug="all"), definition="extended")
    page = Client().get(reverse("subset-rankings", args=["strand", "all", "extended"])).content.decode()
    assert 'id="gameable"' in page
    row = page[page.index('data-method="BobFold"'):]
    row = row[: row.index("</tr>")]
    assert 'data-provenance="program"' in row and "not blind" in row
    cat = page[page.index('data-method="CatFold"'):]
    cat = cat[: cat.index("</tr>")]
    assert 'data-provenance="catalogue"' in cat and "not-blind" not in cat
    overview = Client().get(reverse("dataset-rankings", args=["strand"])).content.decode()
    assert 'id="gameable"' in overview and 'data-provenance="program"' in overview
    home = Client().get(reverse("home")).content.decode()
    assert 'data-provenance="program"' in home and 'data-provenance="catalogue"' in home
    rank_subset(subset=Subset.objects.get(dataset=site["pdb"], slug="all"), definition="extended")
    pdb_page = Client().get(reverse("subset-rankings", args=["pdb", "all", "extended"])).content.decode()
    assert 'id="ungameable"' in pdb_page and "no method owner can game" in pdb_page
    assert 'id="ungameable"' in Client().get(reverse("blind-index")).content.decode()
    assert 'id="ungameable"' in Client().get(reverse("pdb-weeks", args=["pdb"])).content.decode()


def test_a_web_services_answer_for_a_public_reference_is_self_reported_but_counts_blind(
    site, settings, monkeypatch
):
    monkeypatch.setenv("COMPARNA_WEBSERVICE_ALLOWED_NETWORKS", "127.0.0.0/8")  # the local service
    settings.WEBSERVICE_BACKOFF_S = 0.05
    release = timezone.now().date() + dt.timedelta(days=10)
    release += dt.timedelta(days=(2 - release.weekday()) % 7)  # a Wednesday, after now
    week = prerelease.ensure_week(release)
    BlindWeek.objects.filter(pk=week.pk).update(status=BlindWeek.Status.OPEN)
    blind = Target.objects.create(
        dataset=prerelease.ensure_blind_dataset(), source_id="9WS1_1", sequence=SEQ, length=len(SEQ)
    )
    BlindTarget.objects.create(week=week, target=blind, pdb_id="9WS1", entity_id="1", announced=SEQ)
    with PredictorService() as service:
        spec = PredictorSpec(name="BobWeb", program="bobweb", version="1", argv=(), kind="web",
                             endpoint=service.url + "/fold")
        version = register_spec(spec=spec, from_catalogue=False, active=True)
        Method.objects.filter(pk=version.method_id).update(owner=site["bob"])
        static = Prediction.objects.create(method_version=version, target=site["static"][0])
        early = Prediction.objects.create(method_version=version, target=blind)
        for p in (static, early):
            execute_prediction(prediction_id=p.pk)
    static.refresh_from_db()
    early.refresh_from_db()
    assert static.status == early.status == "ok", (static.error, early.error)
    assert static.self_reported and not early.self_reported
    listed = {r["id"]: r for r in Client().get("/api/predictions/?method=BobWeb").json()["results"]}
    assert static.pk not in listed  # self-reported: never public
    rank_subset(subset=Subset.objects.get(dataset=site["strand"], slug="all"), definition="extended")
    page = Client().get(reverse("subset-rankings", args=["strand", "all", "extended"])).content.decode()
    assert 'data-method="BobWeb"' not in page.split('id="not-ranked')[0]
