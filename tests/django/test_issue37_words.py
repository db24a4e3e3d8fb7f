"""Issue 37, item 9: no internal word on a public page (a prediction state's code such as "too_long", DRF's
"DefaultRouter", Django's "Dataset entrys", "1 base pairs"), and the family heat map shows each cell's n and
fades a cell of few targets."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from django.urls import reverse

from comparna.models import DatasetEntry
from comparna.services.pages.families import HEAT_FULL_N, heat_colour, heat_strength
from predictors.models import Method, Prediction
from tests.django.test_public_text import public_urls, visible
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db

INTERNAL = re.compile(
    r"\b(?:too_long|infrastructure_error|DefaultRouter|[Ee]ntrys)\b"
    r"|(?<![\d.])1 (?:base pairs|pairs|targets|families|methods|predictions)\b"
)


def test_public_pages_show_no_internal_word(client, site):
    # a state whose code differs from its words, on a target, its method and the method's predictions
    mid = Method.objects.get(name="MidFold")
    failed = Prediction.objects.filter(method_version__method=mid, status=Prediction.Status.TIMEOUT).first()
    failed.status = Prediction.Status.TOO_LONG
    failed.save(update_fields=["status"])
    urls = [
        *public_urls(),
        reverse("target-detail", args=[failed.target_id]),
        reverse("method-predictions", args=[mid.pk]),
        reverse("method-predictions", args=[mid.pk]) + "?status=too_long",
        "/api/",
    ]
    problems = []
    for url in dict.fromkeys(urls):
        r = client.get(url, follow=True, HTTP_ACCEPT="text/html")
        assert r.status_code == 200, url
        text, _ = visible(r.content.decode())
        problems += [(url, m.group(0)) for m in INTERNAL.finditer(text)]
    # the feeds: counts pluralised, never "target(s)"
    for feed in (reverse("feed-targets"), reverse("feed-rankings")):
        body = client.get(feed).content.decode()
        assert "<entry>" in body, feed
        problems += [(feed, m.group(0)) for m in re.finditer(r"\w+\(s\)|" + INTERNAL.pattern, body)]
        problems += [(feed, "1 targets") for _ in re.finditer(r"<title>1 new targets\b", body)]
    assert not problems, problems
    target_page = visible(client.get(reverse("target-detail", args=[failed.target_id])).content.decode())[0]
    assert "too long" in target_page
    method_page = visible(client.get(reverse("method-detail", args=[mid.pk])).content.decode())[0]
    assert "too long: 1" in method_page
    api_root = visible(client.get("/api/", HTTP_ACCEPT="text/html").content.decode())[0]
    assert "CompaRNA API" in api_root and "read-only" in api_root


def test_names_and_counts_are_plural_where_they_should_be():
    assert DatasetEntry._meta.verbose_name_plural == "dataset entries"
    # the registration test run says "1 base pair", "2 base pairs"
    page = Template("{% include 'predictors/_test_result.html' %}")
    for n, words in ((1, "1 base pair;"), (2, "2 base pairs;"), (0, "0 base pairs;")):
        html = page.render(Context({"result": {"ok": True, "n_pairs": n, "status": "ok", "runtime_s": 1.0}}))
        assert words in " ".join(html.split()), html
    html = page.render(Context({"result": {"ok": True, "n_pairs": 3, "n_probabilities": 1, "status": "ok"}}))
    assert "1 pair probability;" in " ".join(html.split())


def test_heat_map_cells_fade_with_small_n():
    strengths = [heat_strength(n) for n in (1, 2, 5, 10, 20, HEAT_FULL_N, 392)]
    assert strengths == sorted(strengths) and strengths[0] < 0.25 and strengths[-2:] == [1.0, 1.0]
    # the same mean on 1 target and on 392 is not the same colour; from HEAT_FULL_N on it is
    assert heat_colour(0.8, 1)[0] != heat_colour(0.8, 392)[0] == heat_colour(0.8, HEAT_FULL_N)[0]
    assert heat_colour(0.8, 392) == heat_colour(0.8)
    # faded towards white: every channel of the n = 1 colour is lighter
    light, full = heat_colour(0.5, 1)[0], heat_colour(0.5)[0]
    assert all(int(light[i : i + 2], 16) > int(full[i : i + 2], 16) for i in (1, 3, 5))
    # the text stays readable on the faded colour (dark text on a light cell)
    assert heat_colour(0.0, 1)[1] == "#000000" and heat_colour(0.0)[1] == "#FFFFFF"


def test_family_page_cells_show_n(client, site):
    page = client.get(reverse("dataset-families", args=["rnastrand"]), follow=True).content.decode()
    cells = re.findall(
        r'<td class="num heat-cell[^"]*"[^>]*data-n="(\d+)">[^<]*<span class="heat-n">n = (\d+)</span>', page
    )
    assert cells and all(a == b for a, b in cells)
    small = re.findall(r'class="num heat-cell heat-small"[^>]*data-n="(\d+)"', page)
    assert all(int(n) < HEAT_FULL_N for n in small)


def test_a_static_subset_too_small_to_rank_is_marked(client, site):
    from django.core.cache import cache

    from comparna.models import Dataset, Subset, Target

    cache.clear()  # the dataset page is cached under the dataset's version; a new subset does not bump it
    strand = Dataset.objects.get(slug="rnastrand")
    assert strand.kind == Dataset.Kind.STATIC
    tiny = Subset.objects.create(dataset=strand, slug="tiny-pk", name="Tiny pseudoknotted", order=99)
    tiny.targets.add(*Target.objects.filter(dataset=strand).order_by("pk")[:3])
    page = client.get(reverse("dataset-rankings", args=["rnastrand"])).content.decode()
    section = re.search(r'<section class="subset" id="tiny-pk-extended">(.*?)</section>', page, re.S).group(1)
    assert 'data-state="unrankable"' in section and "Not ranked: 3 targets, fewer than the" in section
    assert "<table" not in section
    assert re.search(r'href="#tiny-pk-extended" class="unrankable"[^>]*>Tiny pseudoknotted \(extended\) '
                     r'<span class="small">– too few targets</span>', page)
    # the ranked subsets are not marked
    whole = re.search(r'<section class="subset" id="all-extended">(.*?)</section>', page, re.S).group(1)
    assert "unrankable" not in whole and "<table" in whole
    tiny.delete()


def test_the_datasets_page_marks_a_subset_too_small_to_rank(client, site):
    from django.core.cache import cache

    from comparna.models import Dataset, Subset, Target

    cache.clear()
    strand = Dataset.objects.get(slug="rnastrand")
    tiny = Subset.objects.create(dataset=strand, slug="tiny-pk", name="Tiny pseudoknotted", order=99)
    tiny.targets.add(*Target.objects.filter(dataset=strand).order_by("pk")[:3])
    page = client.get(reverse("datasets")).content.decode()
    row = r"<tr><td>([^<]+)</td>(.*?)<td class=\"num\">(\d+)</td></tr>"
    rows = {name: (rest, n) for name, rest, n in re.findall(row, page, re.S)}
    assert rows["Tiny pseudoknotted"][1] == "3" and "too few targets to rank" in rows["Tiny pseudoknotted"][0]
    assert "too few" not in rows["All RNAs"][0]
    tiny.delete()
    cache.clear()
