"""A development method never leaks: every public page, API list, feed and snapshot is crawled with one
present (scored on every target, better than every public method) and its name must appear nowhere; its
own URLs are 404s for everyone but its owner."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from comparna.models import Dataset, Target
from comparna.services.rankings import recompute_rankings
from comparna.services.scoring import score_prediction
from comparna.snapshots.contents import current_predictions, dataset_state_hash
from predictors.models import Method, MethodVersion, Prediction
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db
SECRET = "SecretDevFold"


@pytest.fixture(scope="module")
def secret(site, django_db_blocker):
    with django_db_blocker.unblock():
        hashes = {ds.slug: dataset_state_hash(ds) for ds in Dataset.objects.all()}
        owner = User.objects.create_user("dev-owner", "dev@x.org", "pw")
        method = Method.objects.create(
            name=SECRET, owner=owner, visibility="development", from_catalogue=False
        )
        version = MethodVersion.objects.create(
            method=method,
            version="1",
            program="secret",
            fingerprint="secret",
            spec={
                "name": SECRET,
                "program": "secret",
                "version": "1",
                "argv": [],
                "kind": "web",
                "endpoint": "https://secret.example.org/fold",
            },
        )
        for target in Target.objects.all():
            ref = target.references.order_by("definition").first()
            p = Prediction.objects.create(method_version=version, target=target, status="ok", pairs=ref.pairs)
            score_prediction(prediction=p)  # perfect: it would top every ranking if it leaked
        recompute_rankings()
        yield {"method": method, "owner": owner, "hashes": hashes}


def public_urls(method_pks: list[int]) -> list[str]:
    urls = [
        "/",
        "/about/",
        "/datasets/",
        "/methods/",
        "/rankings/",
        "/api/methods/?page_size=500",
        "/api/predictions/?page_size=500",
        "/api/scores/?page_size=500",
        "/api/rankings/",
        "/api/targets/?page_size=500",
        "/feeds/rankings.atom",
        "/blind/",
        "/blind/awaiting/",
        "/feeds/targets.atom",
    ]
    a, b = method_pks[:2]
    for ds in Dataset.objects.all():
        urls += [f"/rankings/{ds.slug}/", f"/datasets/{ds.slug}/targets/", f"/snapshots/{ds.slug}/"]
        for subset in ds.subsets.all():
            for d in subset.definitions():
                base = f"/rankings/{ds.slug}/{subset.slug}/{d}/"
                urls += [base, base + "matrix/", f"{base}compare/{a}/{b}/", f"{base}compare/{a}/{b}/data.csv"]
    urls += [f"/targets/{pk}/" for pk in Target.objects.values_list("pk", flat=True)]
    for m in Method.objects.public():
        urls += [f"/methods/{m.pk}/", f"/methods/{m.name}/status/"]
    return urls


def test_no_public_page_api_feed_or_snapshot_shows_a_development_method(secret):
    public = list(Method.objects.public().order_by("name").values_list("pk", flat=True))
    client = Client()
    crawled = 0
    for url in public_urls(public):
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code)
        body = b"".join(r.streaming_content) if r.streaming else r.content
        assert SECRET.encode() not in body, url
        assert b"secret.example.org" not in body, url
        crawled += 1
    assert crawled > 80
    # snapshots: neither the contents nor the state hash (so no new snapshot) change
    for ds in Dataset.objects.all():
        assert not current_predictions(ds).filter(method_version__method=secret["method"]).exists()
        assert dataset_state_hash(ds) == secret["hashes"][ds.slug]


def test_a_development_methods_own_urls_are_404_except_for_its_owner(secret):
    method = secret["method"]
    a = Method.objects.public().first()
    urls = [
        f"/methods/{method.pk}/",
        f"/methods/{SECRET}/status/",
        f"/rankings/rnastrand/all/extended/compare/{method.pk}/{a.pk}/",
        f"/rankings/rnastrand/all/extended/compare/{a.pk}/{method.pk}/data.csv",
        reverse("owner-method", args=[method.pk]),
        f"/api/methods/{method.pk}/",
    ]
    stranger = User.objects.create_user("stranger", "s@x.org", "pw")
    for who in (None, stranger):
        client = Client()
        if who:
            client.force_login(who)
        for url in urls:
            r = client.get(url)
            assert r.status_code in (302, 404), (who, url, r.status_code)  # 302: the login page
    owner = Client()
    owner.force_login(secret["owner"])
    assert owner.get(f"/methods/{SECRET}/status/").status_code == 200
    assert SECRET in owner.get(reverse("owner-method", args=[method.pk])).content.decode()
    assert owner.get(f"/api/methods/{method.pk}/").json()["visibility"] == "development"
    endpoint = owner.get(f"/api/methods/{method.pk}/").json()["versions"][0]["spec"]["endpoint"]
    assert endpoint == "https://secret.example.org/fold"  # the owner sees their endpoint; nobody else does
