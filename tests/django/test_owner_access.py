"""Issue 17, "a non-owner can neither see a development method's results nor act on it": the ways of acting
that tests/django/test_owners.py does not try — a new version through the edit form, the test-run poll,
publication and reactivation, a comparison naming the method, the admin, the callback with an account
token, the owners' API without a token. Each is a 404 (or a refusal) and changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from comparna.owners.models import ApiToken, OwnerProfile
from predictors.core.spec import PredictorSpec
from predictors.execution import execute_prediction
from predictors.forms import TEST_SEQUENCE
from predictors.models import Method, MethodVersion, Prediction, TrialRun
from predictors.services import dispatch_predictions, register_spec
from predictors.trials import execute_test_run, request_test_run
from tests.factories import make_dataset, make_target

pytestmark = [pytest.mark.django_db]

SPEC = PredictorSpec(
    name="BobFold",
    program="bobfold",
    version="1",
    argv=("{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"),
)


@pytest.fixture
def setup():
    ds = make_dataset("strand")
    make_target("GGGGAAAACCCC", "((((....))))", dataset=ds)
    users = {}
    for name in ("bob", "carol"):
        users[name] = User.objects.create_user(name, f"{name}@x.org", "pw")
        OwnerProfile.objects.create(
            user=users[name], email_confirmed_at=timezone.now(), approved_at=timezone.now()
        )
    version = register_spec(spec=SPEC, from_catalogue=False, active=False)
    Method.objects.filter(pk=version.method_id).update(owner=users["bob"], visibility="development")
    carol_version = register_spec(spec=PredictorSpec(**{**SPEC.as_dict(), "name": "CarolFold"}),
                                  from_catalogue=False, active=True)
    Method.objects.filter(pk=carol_version.method_id).update(owner=users["carol"], visibility="development")
    carol = Client()
    carol.force_login(users["carol"])
    return {
        "bob": users["bob"],
        "carol": carol,
        "method": Method.objects.get(pk=version.method_id),
        "carol_method": Method.objects.get(pk=carol_version.method_id),
        "subset": ds.subsets.get(slug="all"),
    }


def test_a_non_owner_cannot_make_a_new_version_or_read_a_test_run(setup):
    carol, method = setup["carol"], setup["method"]
    url = reverse("owner-method-edit", args=[method.pk])
    data = {k: v for k, v in SPEC.as_dict().items() if v is not None and not isinstance(v, (list, bool))}
    data.update(input="single", argv="\n".join(SPEC.argv), version="2", test_sequence=TEST_SEQUENCE,
                upload_window_h=1)
    for button in ("_test", "_save", "_check"):
        assert carol.post(url, {**data, button: "1"}).status_code == 404, button
    assert not TrialRun.objects.exists()
    assert list(MethodVersion.objects.filter(method=method).values_list("version", flat=True)) == ["1"]
    trial = request_test_run(spec=SPEC, sequence=TEST_SEQUENCE, user=setup["bob"])
    assert carol.get(reverse("owner-test-run", args=[trial.pk])).status_code == 404
    assert Client().get(reverse("owner-test-run", args=[trial.pk])).status_code == 302  # to the login page


def test_a_non_owner_can_neither_publish_reactivate_nor_compare_with_it(setup):
    carol, method = setup["carol"], setup["method"]
    for action in ("publish", "reactivate", "deactivate"):
        r = carol.post(reverse("owner-method-action", args=[method.pk]), {"action": action})
        assert r.status_code == 404, action
    method.refresh_from_db()
    assert method.publication_requested_at is None and not method.active
    assert method.visibility == "development"
    compare = reverse("owner-method-compare", args=[setup["carol_method"].pk])
    r = carol.get(compare, {"with": method.pk, "subset": setup["subset"].pk})
    assert r.status_code == 404  # only public methods can be compared with
    # and the owner's page lists only public methods to compare with
    page = carol.get(reverse("owner-method", args=[setup["carol_method"].pk])).content.decode()
    assert "BobFold" not in page


def test_owners_are_not_staff_and_the_callback_takes_only_job_tokens(setup):
    carol, method = setup["carol"], setup["method"]
    assert carol.get("/admin/predictors/method/").status_code == 302  # the admin's login page
    r = carol.post("/admin/predictors/method/", {"action": "make_public", "_selected_action": [method.pk]})
    assert r.status_code == 302
    method.refresh_from_db()
    assert method.visibility == "development"
    _, key = ApiToken.issue(user=User.objects.get(username="carol"), name="carol")
    r = Client().post(
        reverse("owner-api-callback"),
        {"structure": "((((....))))"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert r.status_code == 401
    # the owners' API needs an account: no token, no session → refused
    for url in ("/api/owner/methods/", f"/api/owner/methods/{method.pk}/scores/"):
        assert Client().get(url).status_code in (401, 403), url


def test_the_owner_makes_a_new_version_deactivates_and_reactivates(setup, client):
    """Issue 17 item 1, the owner's side: edit = a new version queued on every target; deactivate = nothing
    more is sent or run (a prediction already sent stays queued); reactivate = sent again and run."""
    bob, method = setup["bob"], setup["method"]
    Method.objects.filter(pk=method.pk).update(active=True)
    client.force_login(bob)
    r = client.post(reverse("owner-method-action", args=[method.pk]), {"action": "reactivate"})
    assert r.status_code == 302
    v1 = method.current_version
    first = v1.predictions.get()
    r = client.post(reverse("owner-method-action", args=[method.pk]), {"action": "deactivate"})
    method.refresh_from_db()
    assert not method.active
    execute_prediction(prediction_id=first.pk)  # its message arrives after the deactivation
    first.refresh_from_db()
    assert first.status == "queued"
    Prediction.objects.filter(pk=first.pk).update(dispatched_at=None)
    assert dispatch_predictions(window=100) == 0  # nothing of a deactivated method is sent
    client.post(reverse("owner-method-action", args=[method.pk]), {"action": "reactivate"})
    first.refresh_from_db()
    assert first.dispatched_at is not None  # sent again
    execute_prediction(prediction_id=first.pk)
    first.refresh_from_db()
    assert first.status == "ok"
    # a new version through the edit form: test run, save, queued on every target
    url = reverse("owner-method-edit", args=[method.pk])
    form = client.get(url).context["form"]
    data = {k: ("" if v is None else v) for k, v in form.initial.items() if not isinstance(v, bool)}
    data.update(name="BobFold", version="2", test_target="", test_sequence=TEST_SEQUENCE, tested="", trial="")
    client.post(url, {**data, "_test": "1"})
    trial = TrialRun.objects.get(requested_by=bob)
    execute_test_run(trial_id=trial.pk)
    r = client.post(url, {**data, "trial": str(trial.pk), "_check": "1"})
    tested = r.context["form"].data["tested"]
    r = client.post(url, {**data, "trial": str(trial.pk), "tested": tested, "_save": "1"}, follow=True)
    assert "BobFold saved as a new version; 1 prediction queued" in r.content.decode()
    method.refresh_from_db()
    assert method.current_version.version == "2" and method.current_version.predictions.count() == 1
    assert list(method.versions.order_by("created_at").values_list("version", flat=True)) == ["1", "2"]
