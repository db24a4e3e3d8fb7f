"""E-mail digests to owners (a dataset finished, a rank changed, made public) and the public Atom feeds, on
the deterministic site data (three dated ranking snapshots per subset; NewFold enters in the newest)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils import timezone

from comparna.models import Dataset, RankingSnapshot, Target
from comparna.owners.models import Notice, OwnerProfile
from comparna.owners.notifications import collect_notices, rank_changes, send_digests
from predictors.models import Method
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db
ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture
def owner(site):
    user = User.objects.create_user("newfold-author", "author@lab.example", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    Method.objects.filter(name__in=["NewFold", "MidFold"]).update(owner=user, published_at=timezone.now())
    return user


def test_digest_lists_finished_datasets_rank_changes_and_publication_once(owner, settings):
    assert collect_notices() > 0
    kinds = set(Notice.objects.filter(owner=owner).values_list("kind", flat=True))
    assert kinds == {"dataset_finished", "rank_changed", "published"}
    # NewFold entered the newest rankings: "not ranked -> rank k"
    entered = Notice.objects.filter(owner=owner, kind="rank_changed", method__name="NewFold")
    assert entered.exists() and all("not ranked -> rank" in n.text for n in entered)
    finished = Notice.objects.get(
        owner=owner,
        kind="dataset_finished",
        method__name="MidFold",
        key__contains=f":{site_dataset('rnastrand')}:",
    )
    assert "finished RNA STRAND: 24 targets" in finished.text and "mean MCC" in finished.text

    # a mail server that is down: nothing is marked sent, nothing is lost
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    assert send_digests() == 0
    assert not Notice.objects.filter(owner=owner, sent_at__isnull=False).exists()
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert send_digests() == 1
    digest = mail.outbox[-1]
    assert digest.to == ["author@lab.example"] and "NewFold" in digest.body and "MidFold" in digest.body
    assert digest.body.count("\n- ") == Notice.objects.filter(owner=owner).count()
    # idempotent: nothing new, no mail
    assert collect_notices() == 0 and send_digests() == 0


def site_dataset(slug: str) -> int:
    return Dataset.objects.get(slug=slug).pk


def test_rank_changes_between_two_snapshots(site):
    snaps = list(
        RankingSnapshot.objects.filter(dataset__slug="rnastrand", subset__slug="all").order_by("computed_at")
    )
    changes = rank_changes(snaps[-1], snaps[-2])
    before = {r["method"]: r["rank"] for r in snaps[-2].report["methods"]}
    after = {r["method"]: r["rank"] for r in snaps[-1].report["methods"]}
    assert {c["method"] for c in changes} == {m for m in after if before.get(m) != after[m]}
    assert any(c["method"] == "NewFold" and c["from"] is None for c in changes)


def test_atom_feeds_list_ranking_changes_and_new_weekly_targets(site):
    rankings = Client().get("/feeds/rankings.atom")
    assert rankings.status_code == 200 and rankings["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(rankings.content)
    entries = feed.findall(f"{ATOM}entry")
    assert entries and all(e.find(f"{ATOM}id").text.startswith("comparna:ranking:") for e in entries)
    titles = " ".join(e.find(f"{ATOM}title").text for e in entries)
    assert "NewFold new→" in titles
    link = entries[0].find(f"{ATOM}link").get("href")
    assert "/rankings/" in link and "?snapshot=" in link
    assert Client().get(link.split("testserver", 1)[-1]).status_code == 200

    targets = ET.fromstring(Client().get("/feeds/targets.atom").content)
    weeks = targets.findall(f"{ATOM}entry")
    released = Target.objects.filter(release_date__isnull=False)
    assert len(weeks) == min(30, released.values("release_date").distinct().count())
    newest = released.order_by("-release_date").first()
    assert newest.source_id in (weeks[0].find(f"{ATOM}summary").text or "")


def test_dataset_and_method_feeds_and_their_autodiscovery(site):
    """Issue 29: per-dataset and per-method feeds, announced by <link rel="alternate"> on every page."""
    client = Client()
    all_entries = ET.fromstring(client.get("/feeds/rankings.atom").content).findall(f"{ATOM}entry")
    for dataset in Dataset.objects.all():
        response = client.get(f"/feeds/rankings/{dataset.slug}.atom")
        assert response.status_code == 200
        entries = ET.fromstring(response.content).findall(f"{ATOM}entry")
        ids = {e.find(f"{ATOM}id").text for e in entries}
        snaps = RankingSnapshot.objects.filter(pk__in=[int(i.split(":")[2]) for i in ids])
        assert all(s.dataset_id == dataset.pk for s in snaps)
        expected = {e.find(f"{ATOM}id").text for e in all_entries
                    if RankingSnapshot.objects.get(pk=int(e.find(f"{ATOM}id").text.split(":")[2])).dataset_id
                    == dataset.pk}
        assert expected <= ids
    assert client.get("/feeds/rankings/nope.atom").status_code == 404

    newfold = Method.objects.get(name="NewFold")
    entries = ET.fromstring(client.get(f"/feeds/methods/{newfold.pk}.atom").content).findall(f"{ATOM}entry")
    assert entries
    for e in entries:
        summary = e.find(f"{ATOM}summary").text
        assert "NewFold" in summary and e.find(f"{ATOM}title").text.count("→") == 1
    private = Method.objects.exclude(visibility=Method.Visibility.PUBLIC).first()
    if private is not None:
        assert client.get(f"/feeds/methods/{private.pk}.atom").status_code == 404

    # autodiscovery: the site feeds on every page, the page's own feed where it has one
    link = re.compile(r'<link rel="alternate" type="application/atom\+xml"[^>]*href="([^"]+)"')

    def alternates(url):
        return set(link.findall(client.get(url).content.decode()))

    for url in ("/", "/about/", "/methods/", "/datasets/", "/targets/"):
        assert {"/feeds/rankings.atom", "/feeds/targets.atom"} <= alternates(url), url
    dataset = RankingSnapshot.objects.first().dataset
    assert f"/feeds/rankings/{dataset.slug}.atom" in alternates(f"/rankings/{dataset.slug}/")
    assert f"/feeds/methods/{newfold.pk}.atom" in alternates(f"/methods/{newfold.pk}/")
