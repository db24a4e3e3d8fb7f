"""The home page answers "which predictor should I trust?" at a glance (issue 29, item 2): per dataset the
top methods with their metric, rank interval and provisional/settled state, then progress, a summary of what
changed, datasets and downloads — and nothing on it grows with the catalogue."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from comparna.models import Dataset, RankingSnapshot
from comparna.services.pages.rankings import glance_order, ranked_rows, ranking_rows
from predictors.models import Method
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db

METHOD_LINK = re.compile(r'href="/methods/\d+/"')


def home(client) -> str:
    from django.core.cache import cache

    cache.clear()
    r = client.get("/")
    assert r.status_code == 200
    return r.content.decode()


def test_home_shows_each_datasets_top_methods_with_interval_state_and_ci(client, site):
    page = home(client)
    cards = page.split('<div class="card">')[1:]
    assert len(cards) == Dataset.objects.exclude(subsets=None).count() >= 2
    for card in cards:
        ds_slug, subset_slug, definition = re.search(
            r'href="/rankings/([\w-]+)/([\w-]+)/(\w+)/"', card).groups()
        snap = RankingSnapshot.objects.filter(
            dataset__slug=ds_slug, subset__slug=subset_slug, definition=definition).first()
        expected = glance_order(ranked_rows(ranking_rows(snap)))[:5]
        rows = re.findall(r'<tr data-method="([^"]+)">(.*?)</tr>', card, re.S)
        assert [html.unescape(m) for m, _ in rows] == [r["method"] for r in expected]
        for (_, cells), r in zip(rows, expected, strict=True):
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cells)).split())
            interval = f" [{r['rank_interval']}]" if r["rank_interval"] else ""
            assert text.startswith(r["rank_text"] + interval)
            m = r["mean_mcc"]
            assert f"{m['mean']:.3f} [{m['low']:.3f}, {m['high']:.3f}]" in text
        assert re.search(r'data-state="(settled|provisional)"', card)
    # the answer comes first: the cards, then progress, what changed, datasets
    order = [page.index(s) for s in ('class="glance"', 'id="progress"', "What changed this week",
                                      "<h2>Datasets</h2>")]
    assert order == sorted(order)


def test_new_methods_are_summarised_and_no_list_grows_with_the_catalogue(client, site):
    before = home(client)
    links_before = len(METHOD_LINK.findall(before))
    Method.objects.bulk_create([Method(name=f"Extra{i:02d}") for i in range(41)])
    new = Method.objects.public().filter(created_at__gte=site_created_since()).count()
    page = home(client)
    changes = page[page.index('id="new-methods"') :].split("</li>", 1)[0]
    assert f"{new} new methods" in changes and f'href="{reverse("methods")}"' in changes
    assert len(METHOD_LINK.findall(changes)) == 3 and f"and {new - 3} more" in changes
    # 41 more methods: the same number of method links as before (the three named are the newest)
    assert len(METHOD_LINK.findall(page)) <= links_before + 3
    assert len(page) < len(before) + 2000
    assert re.search(r'id="home-methods"><a href="/methods/">\d+ active methods</a>', page)
    assert 'id="progress-methods"' not in page  # the per-method progress table is on the ranking pages


def site_created_since():
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(days=7)


def test_datasets_on_the_home_page_link_their_downloads(client, site):
    from comparna.services.pages.site import dataset_downloads

    page = home(client)
    table = page[page.index("<h2>Datasets</h2>") :].split("</table>", 1)[0]
    for d in Dataset.objects.all():
        links = dataset_downloads(d)
        row = table[table.index(f">{html.escape(d.name)}</a>") :].split("</tr>", 1)[0]
        if links:
            assert links[0]["url"] in row and links[-1]["url"] in row
        else:
            assert "none archived yet" in row
