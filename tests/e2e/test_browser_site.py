"""The site at phone width, the target browser and the static files, in headless Chromium.

Reuses the browser fixtures of tests/e2e/browser.py (the production stack with the deterministic site data,
Debian's Chromium through Playwright, a page that records console errors, failed requests and CSP violations).
Screenshots go to test-artifacts/screenshots/ (look at them).
"""

from __future__ import annotations

import re

import pytest
import requests

from tests.e2e.browser import SHOTS, visit  # the fixtures (live_site, browser, page): tests/e2e/conftest.py

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PHONE = {"width": 390, "height": 844}


def overflow(pg) -> dict:
    """How far the page scrolls sideways (0 = not at all), and the widest element sticking out."""
    return pg.evaluate(
        """() => {
        const width = document.documentElement.clientWidth;
        let worst = null;
        for (const el of document.querySelectorAll('body *')) {
            const r = el.getBoundingClientRect();
            if (r.right > width + 1 && !el.closest('.scroll, table.data, table.matrix, .js-plotly-plot')) {
                if (!worst || r.right > worst.right)
                    worst = {tag: el.tagName, cls: el.className.toString(), right: r.right};
            }
        }
        return {extra: document.documentElement.scrollWidth - width, width, worst};
    }"""
    )


@pytest.fixture
def phone(browser):  # noqa: F811 - the imported fixture
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(f"page error: {exc}"))
    pg.on("console", lambda m: pg.errors.append(f"console: {m.text}") if m.type == "error" else None)
    pg.on("response", lambda r: pg.errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    yield pg
    context.close()


def test_pages_at_390_px_never_scroll_sideways(live_site, phone):  # noqa: F811
    base, good, mid = live_site["url"], live_site["good"], live_site["mid"]
    pages = {
        "phone-ranking": "/rankings/rnastrand/all/extended/",
        "phone-home": "/",
        "phone-matrix": "/rankings/rnastrand/all/extended/matrix/",
        "phone-comparison": f"/rankings/rnastrand/all/extended/compare/{good}/{mid}/",
        "phone-method": f"/methods/{good}/",
        "phone-target": f"/targets/{live_site['pdb_target']}/",
        "phone-targets": "/targets/",
    }
    for shot, path in pages.items():
        response = phone.goto(base + path, wait_until="networkidle")
        assert response.status == 200, path
        state = overflow(phone)
        assert state["width"] == 390 and state["extra"] <= 0, (path, state)
        phone.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    assert phone.errors == []

    # the ranking table scrolls inside its own box, and its last column can be scrolled into view
    phone.goto(base + "/rankings/rnastrand/all/extended/", wait_until="networkidle")
    table = phone.locator("#ranking-table")
    box = table.evaluate(
        "t => ({scroll: t.scrollWidth, client: t.clientWidth, x: t.getBoundingClientRect().right})"
    )
    assert box["client"] <= 390 and box["x"] <= 391
    last = phone.locator("#ranking-table thead th").last
    last.scroll_into_view_if_needed()
    right = last.evaluate("th => th.getBoundingClientRect().right")
    assert right <= 391, right
    assert overflow(phone)["extra"] <= 0
    # the navigation wraps: every link is on screen
    for link in phone.locator("header nav a").all():
        b = link.bounding_box()
        assert b and b["x"] >= 0 and b["x"] + b["width"] <= 391, link.text_content()


def test_wide_ranking_table_stays_in_a_1280_px_window(live_site, page):  # noqa: F811
    visit(page, live_site["url"] + "/rankings/rnastrand/all/extended/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def _rows(pg) -> list[dict]:
    return pg.locator("#targets-table tbody tr").evaluate_all(
        """rows => rows.filter(r => r.cells.length > 1).map(r => {
            const head = [...document.querySelectorAll('#targets-table thead th')]
                .map(h => h.textContent.trim());
            const out = {};
            head.forEach((h, k) => out[h.replace(/[^A-Za-z]/g, '')] = r.cells[k].textContent.trim());
            return out;
        })"""
    )


def test_target_filters_in_the_browser(live_site, page):  # noqa: F811
    base = live_site["url"]
    visit(page, base + "/")
    page.locator("header nav a", has_text="Targets").click()
    page.wait_for_load_state("networkidle")
    total = int(re.match(r"(\d+)", page.locator("#match-count").inner_text()).group(1))
    assert total == len(_rows(page)) == 38
    # full-text search finds the class, not only ids
    page.fill("input[name=q]", "tRNA")
    page.click("#target-filters button[type=submit]")
    page.wait_for_load_state("networkidle")
    rows = _rows(page)
    assert rows and all("trna" in (r["Class"] + r["Family"]).lower() for r in rows)
    # dataset + length range + pseudoknots, sorted by length (descending) by clicking the header twice
    page.fill("input[name=q]", "")
    page.select_option("select[name=dataset]", "rnastrand")
    page.fill("input[name=min_length]", "60")
    page.fill("input[name=max_length]", "300")
    page.select_option("select[name=pseudoknotted]", "yes")
    page.click("#target-filters button[type=submit]")
    page.wait_for_load_state("networkidle")
    rows = _rows(page)
    assert rows and all(r["Dataset"] == "RNA STRAND" and 60 <= int(r["Length"]) <= 300 for r in rows)
    assert all(r["PK"] == "yes" for r in rows)
    page.click("#targets-table th[data-key=length] a")
    page.wait_for_load_state("networkidle")
    page.click("#targets-table th[data-key=length] a")
    page.wait_for_load_state("networkidle")
    lengths = [int(r["Length"]) for r in _rows(page)]
    assert lengths == sorted(lengths, reverse=True) and len(lengths) == len(rows)
    assert "pseudoknotted=yes" in page.url and "sort=length" in page.url and "dir=desc" in page.url
    assert page.locator("select[name=pseudoknotted]").input_value() == "yes"  # the form keeps the filters
    page.screenshot(path=str(SHOTS / "targets-filtered.png"), full_page=True)
    # a row leads to its target
    first = page.locator("#targets-table tbody tr td a").first
    name = first.inner_text()
    first.click()
    page.wait_for_load_state("networkidle")
    assert page.locator("h1").inner_text().startswith(name)
    assert page.errors == []


def test_scatter_point_opens_its_target(live_site, page):  # noqa: F811
    base = live_site["url"]
    visit(page, f"{base}/rankings/rnastrand/all/extended/compare/{live_site['good']}/{live_site['mid']}/")
    ids = page.evaluate("document.getElementById('scatter-plot').data.map(t => t.customdata)")
    assert all(isinstance(x, int) for trace in ids for x in trace), ids
    assert page.evaluate("document.getElementById('scatter-plot').layout.meta.point_link") == "/targets/{id}/"
    point = page.locator("#scatter-plot .scatterlayer .trace").first.locator(".point").nth(3)
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.wait_for_timeout(300)
    hover = page.locator("#scatter-plot .hoverlayer .hovertext").first.text_content()
    page.mouse.click(x, y)
    page.wait_for_url(re.compile(r"/targets/\d+/$"), timeout=10_000)
    assert page.locator("h1").inner_text().split()[0] in hover
    assert page.errors == []


def test_static_files_are_hashed_compressed_and_cached_for_a_year(live_site):  # noqa: F811
    base = live_site["url"]
    html = requests.get(base + "/rankings/rnastrand/all/extended/", timeout=30).text
    scripts = re.findall(r'src="(/static/[^"]+)"', html) + re.findall(r'href="(/static/[^"]+\.css)"', html)
    plotly = next(s for s in scripts if "plotly" in s)
    assert re.search(r"plotly\.min\.[0-9a-f]{12}\.js$", plotly), plotly
    for url in scripts:
        for encoding in ("br", "gzip"):
            r = requests.get(base + url, headers={"Accept-Encoding": encoding}, timeout=30, stream=True)
            raw = r.raw.read(decode_content=False)
            assert r.status_code == 200 and r.headers.get("Content-Encoding") == encoding, (url, encoding)
            assert "immutable" in r.headers["Cache-Control"], r.headers["Cache-Control"]
            max_age = int(re.search(r"max-age=(\d+)", r.headers["Cache-Control"]).group(1))
            assert max_age >= 365 * 24 * 3600
            if url == plotly:
                assert len(raw) < (1_200_000 if encoding == "br" else 1_500_000)
    # the unhashed name is not served (every page names the hashed file)
    assert requests.get(base + "/static/plotly/plotly.min.js", timeout=30).status_code == 404
