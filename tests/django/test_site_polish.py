"""Site polish: styled 404/500 pages, figures with rounded and thinned data, no file paths on public pages."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error

from comparna.services.pages.figures import PrLine, pr_curve_figure, thinned
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db


def test_404_is_the_site_page(client, site):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert 'id="error-404"' in page and 'class="site"' in page and "<nav>" in page
    response = client.get("/targets/999999999/")
    assert response.status_code == 404 and 'id="error-404"' in response.content.decode()


def test_500_page_is_styled_and_needs_no_context():
    response = server_error(RequestFactory().get("/"))
    page = response.content.decode()
    assert response.status_code == 500
    assert 'id="error-500"' in page and "site.css" in page and "Traceback" not in page


def test_pr_curve_embeds_rounded_thinned_points():
    n = 100_000  # a pooled curve over all candidate pairs has this many thresholds
    recall = [k / n for k in range(n + 1)]
    precision = [1 - 0.5 * r * r for r in recall]
    text = pr_curve_figure([PrLine("set (extended)", recall, precision, 0.8333333333333334, (0.61, 0.72))])
    figure = json.loads(text)
    xs, ys = figure["data"][0]["x"], figure["data"][0]["y"]
    assert len(text) < 30_000
    assert xs[0] == 0 and xs[-1] == 1 and ys[-1] == 0.5
    assert 300 < len(xs) <= 1000
    # the drawn line is the same: every dropped point lies within 0.002 of the polyline kept
    for k in range(0, n + 1, 997):
        r = recall[k]
        assert abs(precision[k] - float(_interp(r, xs, ys))) < 0.002
    data = json.dumps(figure["data"])
    assert not re.search(r"\d\.\d{5,}", data), "unrounded numbers in the figure's data"


def _interp(x, xs, ys):
    import numpy as np

    return np.interp(x, xs, ys)


def test_thinning_keeps_steps_and_ends():
    xs, ys = thinned([0.0, 0.1, 0.1, 0.1000001, 1.0], [1.0, 1.0, 0.5, 0.5, 0.2])
    assert xs == [0.0, 0.1, 0.1, 1.0] and ys == [1.0, 1.0, 0.5, 0.2]


SERVER_PATH = re.compile(r"(?<![\w.:/}~-])/(?:tmp|var|work|home|root|srv|opt|usr|etc|proc)/[\w.+-]")
PYTHON_DICT = re.compile(r"\{'[^']*': ")


def visible_text(page: str) -> str:
    """The page without <script> bodies (figure JSON) and tags: what a reader sees."""
    page = re.sub(r"<script\b.*?</script>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


# A comparison of two methods and its swap (/compare/<a>/<b>/ and /compare/<b>/<a>/) show the same pair's
# data, columns swapped: the crawl reads one of the two. (Each page took ~0.35 s, most of it building its
# Plotly figures; both orders doubled the test's time.)
PAIR = re.compile(r"(/compare/)(\d+)/(\d+)/")


def crawl(client, start: str = "/", limit: int = 400) -> dict[str, str]:
    """Every public page reachable from ``start`` by links (no admin, API, owner or download pages)."""
    skip = ("/admin/", "/api/", "/owners/", "/account", "/accounts/", "/login", "/logout", "/static/")
    seen, queue, pages = set(), [start], {}
    while queue and len(pages) < limit:
        url = queue.pop(0)
        key = PAIR.sub(lambda m: m[1] + "/".join(sorted((m[2], m[3]), key=int)) + "/", url)
        if key in seen:
            continue
        seen.add(key)
        response = client.get(url)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        page = response.content.decode()
        pages[url] = page
        for href in re.findall(r'href="(/[^"#]*)"', page):
            href = href.replace("&amp;", "&")
            if href.startswith("//") or any(s in href for s in skip):
                continue
            # downloads, pictures and feeds are not HTML: the crawl would fetch and drop them
            if re.search(r"\.(csv|json|txt|tar|gz|zip|svg|atom)", href):
                continue
            if "page=" in href or "sort=" in href:  # one page of each list is enough
                continue
            queue.append(href)
    return pages


def test_public_pages_show_no_server_paths_or_raw_dicts(client, site):
    from comparna.models import ImportRun, Score, Target
    from predictors.models import Method, Prediction

    # what leaked before: a method's venv path in its failure, a temporary folder and an import's summary dict
    target = Target.objects.filter(dataset__slug="rnastrand").order_by("source_id").first()
    version = Method.objects.get(name="WeakFold").current_version
    failed = Prediction.objects.filter(method_version=version, target=target)
    Score.objects.filter(prediction__in=failed).delete()
    failed.update(
        status=Prediction.Status.FAILED,
        pairs="",
        error="exit 1: /srv/comparna/var/venvs/mxfold2/bin/python: can't open file "
        "'/tmp/comparna-job-x1/input.fa' (see /work/main/var/logs/worker.log)",
    )
    ImportRun.objects.create(
        kind="dataset",
        source="/srv/data/archiveII.tar.gz",
        status="done",
        summary={
            "kept": 3864,
            "malformed": ["a: bad", "b: bad"],
            "subsets": {"all": 3864, "short": 2000},
            "cdhit": "/tmp/tmpab12/cd-hit-est -i /tmp/tmpab12/in.fa -c 0.8",
            "source_sha256": "ab" * 32,
        },
    )
    pages = crawl(client)
    assert len(pages) > 40 and f"/targets/{target.pk}/" in pages
    assert any("/methods/" in u and "/predictions/" in u for u in pages)
    problems = {}
    for url, page in pages.items():
        if url.startswith("/submit/"):
            continue  # the submit guide documents the sandbox's PATH and example container paths, on purpose
        text = visible_text(page)
        found = [
            " ".join(text[max(0, m.start() - 40) : m.end() + 30].split())
            for pattern in (SERVER_PATH, PYTHON_DICT)
            for m in pattern.finditer(text)
        ]
        if found:
            problems[url] = found[:3]
    assert problems == {}
    home = visible_text(pages["/"])
    assert "kept: 3864" in home and "malformed: 2" in home and "subsets: all 3864, short 2000" in home
    assert "cd-hit" not in home and "ab" * 32 not in home
    failure = visible_text(pages[f"/targets/{target.pk}/"])
    assert "…/python: can't open file" in failure


def test_scrub_paths_keeps_urls_placeholders_and_fractions():
    from comparna.templatetags.public import scrub_paths

    assert scrub_paths("see https://www.rcsb.org/structure/1ABC and 3/4 done") == (
        "see https://www.rcsb.org/structure/1ABC and 3/4 done"
    )
    assert scrub_paths("{venvs}/mxfold2/bin/python -m x") == "{venvs}/mxfold2/bin/python -m x"
    assert scrub_paths("open /tmp/abc/in.fa failed; cwd /work/main/") == "open …/in.fa failed; cwd …/"
    assert scrub_paths(None) == ""


def test_method_page_links_to_status_rankings_and_predictions(client, site):
    from comparna.models import RankingSnapshot
    from predictors.models import Method, Prediction

    method = Method.objects.get(name="MidFold")
    page = client.get(f"/methods/{method.pk}/").content.decode()
    assert f'href="/methods/{method.pk}/predictions/"' in page and 'href="/methods/MidFold/status/"' in page
    start = page.index('id="method-rankings"')
    table = page[start : page.index("</table>", start)]
    # one row per subset × definition whose newest snapshot ranks it, with that snapshot's rank
    from comparna.services.ranking_scope import is_ranked

    expected = {}
    for snap in RankingSnapshot.objects.select_related("dataset", "subset").order_by("computed_at", "pk"):
        row = next((r for r in snap.report["methods"] if r["method"] == "MidFold"), None)
        key = (snap.dataset.slug, snap.subset.slug, snap.definition)
        # a method with only "?" verdicts is listed as not ranked (never a shared first rank)
        expected[key] = row["rank"] if row and is_ranked(row) else None
    expected = {k: v for k, v in expected.items() if v is not None}
    # each row: its ranking's link, then the rank (with its 95 % interval since issue 27) or "–" (not ranked)
    rows = re.findall(r'href="/rankings/([\w-]+)/([\w-]+)/(\w+)/".*?<td class="num">(\d+|–)', table, re.S)
    shown = {(ds, sub, d): int(rank) for ds, sub, d, rank in rows if rank != "–"}
    assert shown == expected and len(expected) >= 1  # few targets: most pairs "?" under target-level tests

    version = method.current_version
    failed = version.predictions.filter(status=Prediction.Status.FAILED).count()
    listing = client.get(f"/methods/{method.pk}/predictions/").content.decode()
    assert len(re.findall(r'href="/targets/\d+/"', listing)) == min(50, version.predictions.count())
    only_failed = client.get(f"/methods/{method.pk}/predictions/?status=failed").content.decode()
    assert len(re.findall(r'href="/targets/\d+/"', only_failed)) == failed > 0
    assert client.get("/methods/999999/predictions/").status_code == 404


def test_target_page_loads_prediction_drawings_by_url(client, site):
    import xml.etree.ElementTree as ET

    from comparna.models import Target
    from predictors.models import Prediction

    target = Target.objects.filter(dataset__slug="rnastrand").order_by("-length").first()
    page = client.get(f"/targets/{target.pk}/").content.decode()
    ok = list(target.predictions.filter(status=Prediction.Status.OK).select_related("method_version__method"))
    urls = re.findall(r'<img src="(/targets/\d+/predictions/\d+\.svg)" loading="lazy"', page)
    assert len(urls) == len(ok) >= 4 and "<path class=\"pred" not in page  # no inline prediction arcs
    ref = target.references.get(definition="extended")
    ref_pairs = {tuple(map(int, t.split("-"))) for t in ref.pairs.split()}
    for p in ok:
        response = client.get(f"/targets/{target.pk}/predictions/{p.pk}.svg")
        assert response.status_code == 200 and response["Content-Type"].startswith("image/svg+xml")
        svg = response.content.decode()
        root = ET.fromstring(svg.encode())  # a well-formed document with its style inside
        assert root.tag.endswith("svg") and "<style>" in svg
        pred_pairs = {tuple(map(int, t.split("-"))) for t in p.pairs.split()}
        assert svg.count('class="pred tp"') == len(pred_pairs & ref_pairs)
        assert svg.count('class="pred fp"') == len(pred_pairs - ref_pairs)
        assert svg.count('class="ref found"') == len(ref_pairs & pred_pairs)
        assert svg.count('class="ref missed"') == len(ref_pairs - pred_pairs)
    failed = target.predictions.exclude(status=Prediction.Status.OK).first()
    other = Target.objects.exclude(pk=target.pk).first()
    if failed:
        assert client.get(f"/targets/{target.pk}/predictions/{failed.pk}.svg").status_code == 404
    assert client.get(f"/targets/{other.pk}/predictions/{ok[0].pk}.svg").status_code == 404
