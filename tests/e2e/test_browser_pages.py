"""The site in a real browser: Playwright drives Debian's headless Chromium against gunicorn on PostgreSQL.

Every page of the navigation renders without console errors, failed requests or Content-Security-Policy
violations (the pages, Plotly, Swagger UI and the admin satisfy the site's CSP), the ranking table sorts
and filters in place, the Plotly charts draw, and screenshots of the main pages are saved under
test-artifacts/screenshots/ (look at them).
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.browser import SHOTS, ranking_column, visit
from tests.e2e.stack import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

def test_every_page_renders_without_console_errors(live_site, page):
    base = live_site["url"]
    good, mid, target = live_site["good"], live_site["mid"], live_site["pdb_target"]
    pages = {
        "home": "/",
        "about": "/about/",
        "datasets": "/datasets/",
        "rankings-index": "/rankings/",
        "dataset-rankings": "/rankings/rnastrand/",
        "subset-ranking": "/rankings/rnastrand/all/extended/",
        "matrix": "/rankings/rnastrand/all/extended/matrix/",
        "methods": "/methods/",
        "method": f"/methods/{good}/",
        "method-failures": f"/methods/{mid}/",
        "comparison": f"/rankings/rnastrand/all/extended/compare/{good}/{mid}/",
        "target-pdb": f"/targets/{target}/",
        "targets": "/datasets/pdb/targets/",
        "pdb-standard": "/rankings/pdb/all/standard/",
        "api-docs": "/api/docs/",
        # issue 37: every page kind, not only the navigation's
        "ranking-2013": "/rankings/rnastrand/all/extended/?protocol=2013",
        "pdb-rankings": "/rankings/pdb/",
        "method-predictions": f"/methods/{mid}/predictions/",
        "target-browser": "/targets/",
        "families": "/families/rnastrand/",
        "unseen": "/unseen/rnastrand/",
        "weeks": "/weeks/pdb/",
        "blind": "/blind/",
        "blind-awaiting": "/blind/awaiting/",
        "snapshots": "/snapshots/",
        "snapshots-rnastrand": "/snapshots/rnastrand/",
        "pdb-polls": "/pdb/polls/",
        "advice": "/advice/",
        "submit-page": "/submit/",
        "signup": "/account/signup/",
        "login": "/account/login/",
        "password-reset": "/account/password-reset/",
        "api-root": "/api/",
    }
    for name, path in pages.items():
        visit(page, base + path, shot=name)
        assert page.title().endswith("CompaRNA") or name.startswith("api"), name
        # no internal word on any page (issue 37)
        text = page.locator("body").inner_text()
        assert not re.search(r"\btoo_long\b|DefaultRouter|[Ee]ntrys\b|(?<![\d.])1 base pairs", text), name
    # the navigation reaches the main pages
    visit(page, base + "/")
    for label in ("Rankings", "Methods", "Datasets", "How we score", "API"):
        assert page.locator("header nav a", has_text=label).count() == 1
    page.locator("header nav a", has_text="Datasets").click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/datasets/")
    # Swagger UI is served from the sidecar's static files and draws the operations
    visit(page, base + "/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)
    assert page.locator(".opblock").count() >= 8
    assert page.errors == []


_column = ranking_column


def _visible_rows(page) -> list[dict]:
    """The visible rows of ``#ranking-table`` by their stable attributes: the method's name (data-method),
    its kind (data-kind) and whether the method cell carries the "comp." tag. The cell's text is not read
    for the name: since 732d9e8 (issue 36) it also carries the row's provenance tag ("reviewed code", ...)."""
    return page.locator("#ranking-table tbody tr:not([hidden])").evaluate_all(
        "rows => rows.map(r => ({method: r.dataset.method, kind: r.dataset.kind,"
        " comp: [...r.cells[1].querySelectorAll('.tag')].some(t => t.textContent.trim() === 'comp.')}))"
    )


def test_ranking_table_sorts_and_filters_in_place(live_site, page):
    url = live_site["url"] + "/rankings/rnastrand/all/extended/"
    visit(page, url)
    start_url = page.url
    # "2 [1–3]" or "2= [1–3]": the rank (shared: "="), then its interval
    ranks = [int(re.match(r"\d+", x).group()) for x in _column(page, 0)]
    assert ranks == sorted(ranks)
    page.click("#ranking-table th[data-key=mcc] a")
    mccs = [float(x.split()[0]) for x in _column(page, 6)]  # "0.853 (n = 24)": the MCC, then its n
    assert mccs == sorted(mccs, reverse=True) and len(mccs) >= 4
    assert "sort=mcc" in page.url and "dir=desc" in page.url
    page.click("#ranking-table th[data-key=mcc] a")
    assert [float(x.split()[0]) for x in _column(page, 6)] == sorted(mccs)
    page.click("#ranking-table th[data-key=method] a")
    names = [r["method"] for r in _visible_rows(page)]
    assert names == sorted(names, key=str.lower)
    # no reload happened: sorting was client-side
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1 and page.url != start_url
    page.check("input[name=kind][value=comparative]")
    shown = _visible_rows(page)
    assert shown and all(r["kind"] == "comparative" and r["comp"] for r in shown), shown
    assert page.locator("#shown-count").text_content() == str(len(shown))
    page.check("input[name=kind][value=single]")
    single = _visible_rows(page)
    assert single and all(r["kind"] == "single" and not r["comp"] for r in single), single
    page.check("input[name=kind][value=all]")
    assert len(_visible_rows(page)) == len(mccs) == len(shown) + len(single)
    # the rank-history chart is drawn with one line per method
    assert page.locator("#rank-history-plot .scatterlayer .trace").count() == len(mccs)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "subset-ranking-sorted.png"), full_page=True)
    assert page.errors == []


def test_tables_work_without_javascript(live_site, browser):
    context = browser.new_context(java_script_enabled=False)
    pg = context.new_page()
    try:
        pg.goto(live_site["url"] + "/rankings/rnastrand/all/extended/")
        pg.click("#ranking-table th[data-key=mcc] a")  # a real link: the server sorts
        pg.wait_for_load_state("load")
        cells = [c.strip() for c in pg.locator("#ranking-table tbody tr td:nth-child(7)").all_text_contents()]
        mccs = [float(c.split()[0]) for c in cells]
        assert mccs == sorted(mccs, reverse=True)
        pg.check("input[name=kind][value=comparative]")
        pg.click("form.kind-filter button[type=submit]")
        pg.wait_for_load_state("load")
        assert "kind=comparative" in pg.url
        names = pg.locator("#ranking-table tbody td.method").all_text_contents()
        assert names and all("comp." in n for n in names)
        # every row links to a comparison of its method on this snapshot
        assert pg.locator("#ranking-table tbody td.method a.compare").count() == len(names)
    finally:
        context.close()


def test_comparison_and_target_pictures(live_site, page):
    base = live_site["url"]
    visit(page, f"{base}/rankings/rnastrand/all/extended/compare/{live_site['good']}/{live_site['mid']}/")
    # one dot per common target and method in the scatter
    n_common = page.locator("#per-target tbody tr").count()
    points = page.locator("#scatter-plot .scatterlayer .point").count()
    assert n_common > 10 and points == 2 * n_common
    with page.expect_download() as download:
        page.click("a.download[href*='data.csv']")
    assert download.value.suggested_filename.endswith(".csv")
    with page.expect_download() as download:
        page.click("#pair-zip")
    assert download.value.suggested_filename.endswith(".zip")
    visit(page, f"{base}/targets/{live_site['pdb_target']}/")
    assert page.locator("figure.ref-extended svg path.extended").count() >= 1
    assert page.locator("a[href^='https://www.rcsb.org/structure/']").count() == 1
    assert page.errors == []


def test_admin_pages_satisfy_the_content_security_policy(live_site, page):
    base = live_site["url"]
    live_site["stack"].manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User\n"
        "User.objects.create_superuser('csp', password='pw-csp-test')",
    )
    visit(page, base + "/admin/login/", shot="admin-login")
    page.fill("#id_username", "csp")
    page.fill("#id_password", "pw-csp-test")
    page.click("input[type=submit]")
    page.wait_for_load_state("networkidle")
    for path in ("/admin/", "/admin/predictors/method/register/", "/admin/predictors/prediction/"):
        visit(page, base + path, shot="admin" + path.rstrip("/").replace("/", "-"))


def test_admin_test_run_goes_through_a_worker_and_the_page_polls(live_site, page):
    """Register a predictor in the browser: the test run is done by a real Celery worker (queue
    ``testrun``) while the page polls; a never-ending test run holds no web worker and ends timed out."""
    import json
    import time

    import requests

    base, stack = live_site["url"], live_site["stack"]
    if "worker-testrun" not in stack.services:
        stack.start_worker("testrun")
    stack.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User\n"
        "User.objects.create_superuser('runner', password='pw-runner-test')",
    )
    visit(page, base + "/admin/login/")
    page.fill("#id_username", "runner")
    page.fill("#id_password", "pw-runner-test")
    page.click("input[type=submit]")
    page.wait_for_load_state("networkidle")

    def fill(name: str, argv: list[str]) -> None:
        visit(page, base + "/admin/predictors/method/register/")
        page.fill("#id_name", name)
        page.fill("#id_program", "a test program")
        page.fill("#id_version", "1")
        page.fill("#id_argv", json.dumps(argv))
        page.select_option("#id_output_format", "dot-bracket")

    # A never-ending program: the request returns at once and the web server keeps answering.
    fill("Sleeper", ["/bin/sh", "-c", "sleep 600; : {sequence}"])
    start = time.monotonic()
    page.click("input[name=_test]")
    page.wait_for_selector("#test-result")
    assert time.monotonic() - start < 5
    assert requests.get(base + "/", timeout=5).status_code == 200
    page.wait_for_selector("#test-error", timeout=60_000)
    assert "timeout" in page.locator("#test-result").inner_text()
    assert page.locator("input[name=_save]").is_disabled()
    assert page.evaluate("window.__csp") == [] and page.errors == []

    # A real predictor: the worker's result appears in place and enables saving.
    fill("BrowserFold", ["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"])
    page.click("input[name=_test]")
    page.wait_for_selector("#test-result .test-ok", timeout=60_000)
    assert page.locator("input[name=_save]").is_enabled()
    page.click("input[name=_save]")
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("/methods/BrowserFold/status/"), page.url
    assert page.evaluate("window.__csp") == [] and page.errors == []
    out = stack.manage("shell", "-c", "from predictors.models import Method; "
                       "print(Method.objects.filter(name='BrowserFold').count())").stdout
    assert out.split()[-1] == "1"
    assert "run_test_task" in stack.services["worker-testrun"].tail(10**6)


def test_submit_a_method_walkthrough_from_the_home_page(live_site, page):
    """Issue 16 item 6 in Chromium: home → "Submit a method" → sign up → the e-mailed confirmation link →
    (staff approval) → sign in → register a command method → the worker's test run, scored against the test
    target's known reference → save → the queued development method with its success message and ETA."""
    base, stack = live_site["url"], live_site["stack"]
    if "worker-testrun" not in stack.services:
        stack.start_worker("testrun")
    visit(page, base + "/")
    page.locator("header nav a", has_text="Submit a method").click()
    page.wait_for_load_state("networkidle")
    assert page.url == base + "/submit/"
    assert page.locator("#placeholders code", has_text="{python}").count() == 1
    assert page.locator("#wrappers code", has_text="predictors.programs.vienna_fold").count() >= 1
    visit(page, page.url, shot="submit")
    page.click("#submit-signup")
    page.fill("#id_username", "wren")
    page.fill("#id_email", "wren@lab.example")
    page.fill("#id_password1", "a long passphrase 42")
    page.fill("#id_password2", "a long passphrase 42")
    page.click("button[type=submit]")
    page.wait_for_selector("#signup-done")
    # the console e-mail backend writes the confirmation mail to gunicorn's log
    path = wait_for(
        lambda: re.findall(r"/account/confirm/[^\s/]+/", stack.services["gunicorn"].tail(10**6)),
        timeout=30,
        what="the confirmation e-mail",
    )[-1]
    visit(page, base + path)
    assert page.locator("#confirmed").count() == 1
    stack.manage(
        "shell",
        "-c",
        "from comparna.owners.accounts import approve_owner; "
        "from comparna.owners.models import OwnerProfile; "
        "assert approve_owner(profile=OwnerProfile.objects.get(user__username='wren'), by=None)",
    )
    visit(page, base + "/submit/")
    page.click("#submit-login")
    page.fill("#id_username", "wren")
    page.fill("#id_password", "a long passphrase 42")
    page.click("button[type=submit]")
    page.wait_for_url(base + "/account/methods/new/")
    chosen = page.locator("#id_test_target option:checked").inner_text()
    assert "nt" in chosen  # a stored target with a known reference is the default test target
    # both pages read at 390 px without horizontal page overflow (tables and code scroll inside themselves)
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/submit/", "/account/methods/new/"):
        page.goto(base + path, wait_until="networkidle")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(base + "/account/methods/new/", wait_until="networkidle")
    page.fill("#id_name", "WrenFold")
    page.fill("#id_program", "wrenfold")
    page.fill("#id_version", "0.1")
    page.fill("#id_argv", "{python}\n-m\npredictors.programs.vienna_fold\n--mode\nmfe\n{fasta}")
    page.click("input[name=_test]")
    page.wait_for_selector("#test-score", timeout=60_000)
    target_id = chosen.split(" · ")[0]
    assert target_id in page.locator("#test-score-target").inner_text()
    mcc = float(page.locator("#test-score td.mcc").first.inner_text())
    f1 = float(page.locator("#test-score td.f1").first.inner_text())
    assert -1 <= mcc <= 1 and 0 <= f1 <= 1
    assert "reference (" in page.locator("#test-structure").inner_text()
    assert page.locator("input[name=_save]").is_enabled()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "submit-test-run-scored.png"), full_page=True)
    page.click("input[name=_save]")
    page.wait_for_url(re.compile(r".*/account/methods/\d+/$"))
    message = page.locator("ul.messages li").inner_text()
    import requests

    n_targets = requests.get(base + "/api/targets/", timeout=30).json()["count"]
    assert re.match(
        rf"WrenFold registered as a development method; {n_targets} predictions queued; "
        r"(done within (about .+|a minute) at its own recent rate \(.+\)|no estimate yet: .+)\.$",
        message,
    ), message
    assert page.locator("#visibility").inner_text() == "development"
    assert page.locator("#total").inner_text() == str(n_targets)
    page.screenshot(path=str(SHOTS / "submit-saved.png"), full_page=True)
    assert page.evaluate("window.__csp") == [] and page.errors == [], page.errors
