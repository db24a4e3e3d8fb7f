"""The site in a real browser: Playwright drives Debian's headless Chromium against gunicorn on PostgreSQL.

Every page of the navigation renders without console errors, failed requests or Content-Security-Policy
violations (the pages, Plotly, Swagger UI and the admin satisfy the site's CSP), the ranking table sorts
and filters in place, the Plotly charts draw, and screenshots of the main pages are saved under
test-artifacts/screenshots/ (look at them).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import REPO, production_stack, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = REPO / "test-artifacts" / "screenshots"


@pytest.fixture(scope="module")
def live_site():
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed (apt-get install chromium)")
    static_root = Path(tempfile.mkdtemp(prefix="comparna-static-"))
    # Admin test runs are capped at 5 s here, so that a never-ending one is shown timed out quickly.
    env = {"COMPARNA_STATIC_ROOT": str(static_root), "COMPARNA_TEST_RUN_LIMIT_S": "5"}
    try:
        with production_stack(extra_env=env) as stack:
            stack.manage("collectstatic", "--noinput", "-v", "0")
            stack.manage("shell", "-c", "from tests.web_data import build_site_data; build_site_data()")
            ids = stack.manage(
                "shell",
                "-c",
                (
                    "from predictors.models import Method; from comparna.models import Target;"
                    "print('IDS', Method.objects.get(name='GoodFold').pk,"
                    " Method.objects.get(name='MidFold').pk,"
                    " Target.objects.filter(dataset__slug='pdb').order_by('source_id').first().pk)"
                ),
            ).stdout
            ids = next(line.split()[1:] for line in ids.splitlines() if line.startswith("IDS "))
            url = stack.start_web()
            yield {"url": url, "good": ids[0], "mid": ids[1], "pdb_target": ids[2], "stack": stack}
    finally:
        shutil.rmtree(static_root, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # Every CSP violation of the page (blocked scripts, styles, eval, frames) is recorded.
    context.add_init_script(
        "window.__csp = [];\n"
        "document.addEventListener('securitypolicyviolation', e => window.__csp.push(\n"
        "    e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber));"
    )
    pg = context.new_page()
    pg.errors = []
    pg.on(
        "console",
        lambda msg: pg.errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
    )
    pg.on("pageerror", lambda exc: pg.errors.append(f"page error: {exc}"))
    # net::ERR_ABORTED is the browser cancelling (a download, or leaving a page mid-fetch), not a failure
    pg.on(
        "requestfailed",
        lambda req: (
            pg.errors.append(f"request failed: {req.url} ({req.failure})")
            if "ERR_ABORTED" not in (req.failure or "")
            else None
        ),
    )
    pg.on("response", lambda r: pg.errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    yield pg
    context.close()


def visit(page, url: str, shot: str | None = None):
    response = page.goto(url, wait_until="networkidle")
    assert response is not None and response.status == 200, url
    if page.locator("[data-figure]").count():
        try:
            page.wait_for_function(
                "[...document.querySelectorAll('[data-figure]')].every(d => d.classList.contains('rendered')"
                " && d.querySelector('.main-svg'))",
                timeout=20_000,
            )
        except Exception as exc:  # noqa: BLE001 - report what the browser said
            raise AssertionError(f"charts not drawn on {url}: {page.errors}") from exc
    if shot:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    assert "script-src 'self'" in response.headers.get("content-security-policy", ""), url
    assert page.evaluate("window.__csp") == [], (url, page.evaluate("window.__csp"))
    assert page.errors == [], (url, page.errors)


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
    }
    for name, path in pages.items():
        visit(page, base + path, shot=name)
        assert page.title().endswith("CompaRNA") or name.startswith("api"), name
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


def _column(page, index: int) -> list[str]:
    cells = page.locator("#ranking-table tbody tr:not([hidden])").evaluate_all(
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())"
    )
    # the method cell ends with the row's "compare" link; a shared rank reads "2="
    return [re.sub(r"\s+compare$", "", c).rstrip("=") for c in cells]


def test_ranking_table_sorts_and_filters_in_place(live_site, page):
    url = live_site["url"] + "/rankings/rnastrand/all/extended/"
    visit(page, url)
    start_url = page.url
    ranks = [int(x) for x in _column(page, 0)]
    assert ranks == sorted(ranks)
    page.click("#ranking-table th[data-key=mcc] a")
    mccs = [float(x) for x in _column(page, 6)]
    assert mccs == sorted(mccs, reverse=True) and len(mccs) >= 4
    assert "sort=mcc" in page.url and "dir=desc" in page.url
    page.click("#ranking-table th[data-key=mcc] a")
    assert [float(x) for x in _column(page, 6)] == sorted(mccs)
    page.click("#ranking-table th[data-key=method] a")
    names = [re.sub(r"\s+comp\.$", "", x) for x in _column(page, 1)]
    assert names == sorted(names, key=str.lower)
    # no reload happened: sorting was client-side
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1 and page.url != start_url
    page.check("input[name=kind][value=comparative]")
    shown = _column(page, 1)
    assert shown and all(x.endswith("comp.") for x in shown)
    assert page.locator("#shown-count").text_content() == str(len(shown))
    page.check("input[name=kind][value=single]")
    assert all(not x.endswith("comp.") for x in _column(page, 1))
    page.check("input[name=kind][value=all]")
    assert len(_column(page, 1)) == len(mccs)
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
        mccs = [float(c) for c in cells]
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
        page.click("a.download")
    assert download.value.suggested_filename.endswith(".csv")
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
        r"(done within (about .+|a minute) at the workers' recent rate \(.+\)|no estimate yet: .+)\.$",
        message,
    ), message
    assert page.locator("#visibility").inner_text() == "development"
    assert page.locator("#total").inner_text() == str(n_targets)
    page.screenshot(path=str(SHOTS / "submit-saved.png"), full_page=True)
    assert page.evaluate("window.__csp") == [] and page.errors == [], page.errors


def _eta_minutes(text: str) -> float:
    """Minutes of an ETA text of comparna.services.progress.eta_text ("8 min", "1 h 05 min")."""
    m = re.fullmatch(r"(?:(\d+) h )?(\d+) min", text)
    assert m, text
    return int(m.group(1) or 0) * 60 + int(m.group(2))


def test_provisional_ranking_with_coverage_eta_and_downloads(live_site, page):
    """A dataset still filling in: the ranking says provisional (and why), each ranked method's coverage,
    the ETA from the measured throughput, the methods not ranked yet with their reason; downloads work."""
    import datetime as dt
    import json

    stack, base = live_site["stack"], live_site["url"]
    out = stack.manage(
        "shell",
        "-c",
        "import json; from tests.web_data import build_provisional_dataset as b; r = b();"
        "print('PROV', json.dumps({**r, 'first_start': r['first_start'].timestamp()}))",
    ).stdout
    info = json.loads(next(line[5:] for line in out.splitlines() if line.startswith("PROV ")))
    try:
        before = dt.datetime.now(dt.UTC).timestamp()
        visit(page, base + "/rankings/growing/all/extended/", shot="ranking-provisional")
        after = dt.datetime.now(dt.UTC).timestamp()
        state = page.locator("#ranking-state")
        assert state.get_attribute("data-state") == "provisional"
        # 3 methods x 4 targets still queued + NewFold's 16
        assert info["pending"] == 28 and info["finished"] == 36
        assert "Provisional: 28 predictions of active methods still unfinished" in state.inner_text()
        assert "Settled means: no prediction of an active method" in state.inner_text()
        # the ETA: unfinished / (finished in the window / the minutes since the first of them started)
        eta = re.search(r"finish in about (.+?) \(", page.locator("#ranking-eta").inner_text()).group(1)
        low = 28 / (36 / ((before - info["first_start"]) / 60))
        high = 28 / (36 / ((after - info["first_start"]) / 60))
        assert round(low) - 1 <= _eta_minutes(eta) <= round(high) + 1, (eta, low, high)
        # coverage of every ranked method and the common targets the scores are computed on
        rows = page.locator("#ranking-table tbody tr")
        assert rows.count() == 3
        assert _column(page, 9) == ["12 / 16"] * 3
        assert page.locator("#common-targets").inner_text() == "12"
        listed = page.locator("#not-ranked-list li")
        reasons = dict(
            zip(
                listed.evaluate_all("l => l.map(x => x.dataset.method)"),
                listed.locator(".reason").all_inner_texts(),
                strict=True,
            )
        )
        assert reasons["NewFold"] == "no prediction finished yet (16 queued or running)"
        assert reasons["AliFold(seed)"] == "no predictions queued on these targets"
        # per-method progress with each one's ETA
        page.click("#progress details summary")
        per = page.locator("#progress-methods tr[data-method=GoodFold] td").all_inner_texts()
        assert per[1] == "12 / 16" and per[2] == "4" and re.fullmatch(r"\d+ min", per[4]), per
        # the downloads carry the same snapshot
        with page.expect_download() as download:
            page.click("#download-csv")
        assert (
            download.value.suggested_filename
            == f"ranking-growing-all-extended-snapshot{info['snapshot']}.csv"
        )
        json_url = base + page.locator("#download-json").get_attribute("href")
        data = json.loads(page.request.get(json_url).text())
        assert data["snapshot"] == info["snapshot"] and data["common_targets"] == 12
        assert [m["targets_scored"] for m in data["methods"] if m["ranked"]] == [12, 12, 12]
        # the home page's card says provisional too
        visit(page, base + "/", shot="home-provisional")
        card = page.locator(".glance .card", has_text="Growing set")
        assert card.locator("[data-state]").get_attribute("data-state") == "provisional"
        # its overall progress is cached for 30 s (per web process): within that it shows the new ETA
        deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=40)
        while page.locator("#progress-eta").count() == 0 and dt.datetime.now(dt.UTC) < deadline:
            page.wait_for_timeout(2000)
            page.reload(wait_until="networkidle")
        assert "ETA: about" in page.locator("#progress-eta").inner_text()
        page.screenshot(path=str(SHOTS / "home-provisional.png"), full_page=True)
    finally:
        stack.manage("shell", "-c", "from tests.web_data import remove_provisional_dataset as r; r()")


def test_snapshot_comparison_counts_equal_the_matrix_cell(live_site, page):
    """From an older snapshot's matrix to the comparison and through the method picker: the common-target
    count shown is the matrix cell's, and the per-target table has that many rows."""
    base, stack = live_site["url"], live_site["stack"]
    out = stack.manage(
        "shell",
        "-c",
        "from comparna.models import RankingSnapshot as R;"
        "print('SNAPS', *R.objects.filter(dataset__slug='rnastrand', subset__slug='all')"
        ".order_by('computed_at', 'pk').values_list('pk', flat=True))",
    ).stdout
    snaps = next(line.split()[1:] for line in out.splitlines() if line.startswith("SNAPS "))
    oldest, newest = snaps[0], snaps[-1]

    def cell(a: str, b: str) -> tuple[int, str]:
        link = page.locator(
            f'td.common a[title="{a} vs {b}: "], td.common a[title^="{a} vs {b}:"],'
            f' td.common a[title^="{b} vs {a}:"]'
        ).first
        return int(link.inner_text()), link.get_attribute("href")

    visit(
        page, f"{base}/rankings/rnastrand/all/extended/matrix/?snapshot={oldest}", shot="matrix-old-snapshot"
    )
    n_old, href = cell("GoodFold", "MidFold")
    page.goto(base + href, wait_until="networkidle")
    assert f"snapshot={oldest}" in page.url
    assert page.locator("#data-source").get_attribute("data-source") == "snapshot"
    assert int(page.locator("#n-common").inner_text()) == n_old
    assert page.locator("#per-target tbody tr").count() == n_old
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "comparison-old-snapshot.png"), full_page=True)
    # the newest snapshot has more common targets for the same pair: the page follows the snapshot
    visit(page, f"{base}/rankings/rnastrand/all/extended/matrix/?snapshot={newest}")
    n_new, _ = cell("GoodFold", "MidFold")
    assert n_new > n_old
    # the method picker keeps the snapshot: GoodFold against WeakFold in the oldest one
    visit(page, f"{base}/rankings/rnastrand/all/extended/matrix/?snapshot={oldest}")
    n_weak, _ = cell("GoodFold", "WeakFold")
    page.goto(base + href, wait_until="networkidle")
    page.select_option("#method-picker select[name=a]", label="GoodFold")
    page.select_option("#method-picker select[name=b]", label="WeakFold")
    page.click("#method-picker button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert f"snapshot={oldest}" in page.url and "/compare/" in page.url
    assert int(page.locator("#n-common").inner_text()) == n_weak
    # one verdict; the rest is under "Secondary statistics"
    assert page.locator("p.verdict").count() == 1
    assert page.locator("#secondary").count() == 1 and page.locator("#paired-verdict").count() == 1
    # a method the old snapshot never ranked: an empty state, not a table of zeros
    page.select_option("#method-picker select[name=b]", label="NewFold")
    page.click("#method-picker button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert page.locator("#empty-state").count() == 1 and page.locator("#pooled-counts").count() == 0
    page.screenshot(path=str(SHOTS / "comparison-empty.png"), full_page=True)
    assert page.errors == []
