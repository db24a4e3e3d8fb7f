"""The shared browser-test stack: one production stack (PostgreSQL, Redis, gunicorn, workers) with the
deterministic site data, one headless Chromium, and a page that records console errors, failed requests and
CSP violations. The fixtures are registered in ``tests/e2e/conftest.py`` with session scope, so every browser
test module shares one server."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import REPO, production_stack

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


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
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


def ranking_column(page, index: int) -> list[str]:
    """The text of one column of the visible rows of ``#ranking-table``; the method cell without its
    "compare" link, a shared rank ("2=") as its number."""
    cells = page.locator("#ranking-table tbody tr:not([hidden])").evaluate_all(
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())"
    )
    return [re.sub(r"\s+compare$", "", c).rstrip("=") for c in cells]
