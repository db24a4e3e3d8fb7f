"""Declared training data of a public method are part of what staff approve (issue 36).

The attack: the owner of a public method declares training data that names almost no family, so that almost
every target counts as unseen for their method in the public leakage-aware ranking. The change is stored as a
proposal: the unseen ranking keeps the approved declaration until staff approve it (the admin's "Make public"
action, as for a new program), and staff are asked by e-mail.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.models import Target
from comparna.owners.methods import register_owner_method
from comparna.owners.models import OwnerProfile
from comparna.services.leakage import rank_unseen
from comparna.services.scoring import score_prediction
from predictors.core.spec import PredictorSpec
from predictors.models import Method, Prediction
from predictors.publication import publish
from tests.django.test_leakage import _random_db, archiveii  # noqa: F401 - the ArchiveII slice fixture
from tests.factories import make_method_version, make_prediction

pytestmark = pytest.mark.django_db

SEED = 5
#: Bob's approved declaration: most of ArchiveII's families were in his training set.
APPROVED = ("tRNA", "5S rRNA", "SRP RNA", "tmRNA", "RNase P RNA", "group I intron")
#: What he declares afterwards: one family, so that almost every target would count as unseen.
PROPOSED = ("telomerase RNA",)


def staff_client() -> Client:
    staff = User.objects.create_user("staff", "staff@x.org", "pw", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def bob_method(archiveii, django_capture_on_commit_callbacks):  # noqa: F811 - the fixture above
    bob = User.objects.create_user("bob", "bob@lab.example", "pw")
    OwnerProfile.objects.create(user=bob, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    spec = PredictorSpec(name="BobFold", program="bobfold", version="1", argv=("/bin/echo", "{sequence}"),
                         training_data=APPROVED)
    version = register_owner_method(user=bob, spec=spec)
    assert publish(method=version.method)
    rng = random.Random(3)
    others = [make_method_version("Thermo"), make_method_version("OtherFold")]
    for v in others:
        v.spec = {**v.spec, "training_data": ["turner2004-melting"]}
        v.save()
    Prediction.objects.filter(method_version=version).delete()  # queued by the registration
    for target in Target.objects.filter(dataset=archiveii).order_by("source_id"):
        for v in (version, *others):
            score_prediction(prediction=make_prediction(v, target, _random_db(rng, target.length)))
    return bob, Method.objects.get(pk=version.method_id), spec


def seen(row) -> int:
    return row.report["per_method"]["BobFold"]["seen_by_family"]


def test_an_owners_new_training_declaration_waits_for_staff_before_the_unseen_ranking_uses_it(
    archiveii, bob_method, django_capture_on_commit_callbacks  # noqa: F811
):
    bob, method, spec = bob_method
    staff = staff_client()
    before, new = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert new and seen(before) > 0
    declared = before.inputs["declarations"]["BobFold"]["families"]
    assert set(declared) == set(APPROVED)

    # the owner declares something else for the same program: a proposal, not the public declaration
    with django_capture_on_commit_callbacks(execute=True):
        version = register_owner_method(user=bob, spec=dataclasses.replace(spec, training_data=PROPOSED),
                                        method=method)
    assert version.is_current and version.proposed_training_data == list(PROPOSED)
    assert tuple(version.spec["training_data"]) == APPROVED
    assert any(m.subject.endswith("Training data to review: BobFold") for m in mail.outbox)
    same, new = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert not new and same.pk == before.pk and seen(same) == seen(before)  # the ranking is unchanged
    page = Client().get(reverse("method-detail", args=[method.pk])).content.decode()
    assert "telomerase RNA" not in page  # the public page shows the approved declaration
    owner = Client()
    owner.force_login(bob)  # the owner sees their proposal waiting, and edits from it
    assert 'id="training-review"' in owner.get(reverse("owner-method", args=[method.pk])).content.decode()
    form = owner.get(reverse("owner-method-edit", args=[method.pk])).context["form"]
    assert form.initial["training_data"] == "telomerase RNA"
    mine = owner.get(f"/api/owner/methods/{method.pk}/").json()["version"]
    assert mine["proposed_training_data"] == list(PROPOSED)
    assert Client().get(f"/api/methods/{method.pk}/").json()["versions"][0]["spec"]["training_data"] == list(
        APPROVED)  # the public API: the approved declaration

    # staff approve it with the same action as a new program: the next unseen ranking uses it
    r = staff.post(reverse("admin:predictors_method_changelist"),
                            {"action": "make_public", "_selected_action": [method.pk]})
    assert r.status_code == 302
    version.refresh_from_db()
    assert version.proposed_training_data is None and tuple(version.spec["training_data"]) == PROPOSED
    after, new = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    assert new and after.inputs["declarations"]["BobFold"]["families"] == ["telomerase RNA"]
    assert seen(after) < seen(before)
