"""The advisor (issue 40) as a user meets it: headless Chromium on gunicorn, PostgreSQL, Redis and a real
Celery worker of the ``testrun`` queue (which takes the advisor's queue too); real cmscan, real predictors.

Pasting yeast tRNA-Phe gives its family, the near-identical target, the tRNA ranking with n and intervals,
and three finished structures drawn with their agreement; a FASTA of three gives three answers; bad inputs
each give their error and queue nothing. Prints the time from paste to three finished structures.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from tests.e2e.browser import SHOTS
from tests.e2e.stack import production_stack
from tests.support.advice_data import TOP, TRNA_PHE

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

SETUP = (
    "from tests.support.advice_data import build_advice_benchmark; b = build_advice_benchmark();"
    "print('TARGET', b['target'].pk)"
)
COUNT = "from comparna.advice.models import AdviceRequest; print('REQUESTS', AdviceRequest.objects.count())"
#: Requests one address may make per window in this stack (the flow above uses three).
PER_ADDRESS = 4


@pytest.fixture(scope="module")
def advice_site(tmp_path_factory):
    static_root = tmp_path_factory.mktemp("advice-static")
    env = {"COMPARNA_STATIC_ROOT": str(static_root), "COMPARNA_ADVICE_MAX_OPEN_RUNS": "3",
           "COMPARNA_ADVICE_PER_ADDRESS": str(PER_ADDRESS)}
    with production_stack(extra_env=env) as stack:
        stack.manage("collectstatic", "--noinput", "-v", "0")
        out = stack.manage("shell", "-c", SETUP).stdout
        target = next(line.split()[1] for line in out.splitlines() if line.startswith("TARGET "))
        stack.start_worker("testrun", concurrency=2)
        yield {"url": stack.start_web(), "target": target, "stack": stack}


def _new_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors = []
    pg.on("console", lambda m: pg.errors.append(f"console: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda exc: pg.errors.append(f"page error: {exc}"))
    return context, pg


def _submit(pg, url: str, text: str) -> None:
    pg.goto(url + "/advice/")
    pg.fill("#sequences", text)
    pg.click("#advice-form button[type=submit]")
    pg.wait_for_load_state("domcontentloaded")


def _wait_done(pg, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = pg.locator("#advice-status")
        if status.count() and status.get_attribute("data-status") == "done":
            return
        pg.wait_for_timeout(1000)
    raise AssertionError(f"the advice was not done within {timeout_s} s:\n{pg.content()[:3000]}")


def test_trna_phe_then_three_sequences_then_bad_inputs(advice_site, browser):
    url = advice_site["url"]
    context, pg = _new_page(browser)
    try:
        started = time.monotonic()
        _submit(pg, url, f">yeast tRNA-Phe\n{TRNA_PHE}\n")
        assert "/advice/" in pg.url and pg.url.rstrip("/") != url + "/advice"
        _wait_done(pg, 300)
        took = time.monotonic() - started
        print(f"advice: paste to three finished structures of a 76-nt tRNA: {took:.1f} s")
        html = pg.content()
        assert "tRNA (Rfam RF00005" in html
        assert f'href="/targets/{advice_site["target"]}/"' in html
        assert "1 tRNA target in 1 dataset" in html
        runs = pg.locator("figure.advice-run")
        assert [runs.nth(k).get_attribute("data-method") for k in range(runs.count())] == list(TOP)
        assert all(runs.nth(k).get_attribute("data-status") == "done" for k in range(3))
        images = pg.locator("figure.advice-run img")
        assert images.count() == 3
        for k in range(3):  # each drawing loads as an image once scrolled to (they load lazily)
            images.nth(k).scroll_into_view_if_needed()
            image = images.nth(k).element_handle()
            pg.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image, timeout=20_000)
        assert pg.locator("table.agreement tbody tr").count() == 3
        assert pg.locator("table.slice tbody tr").count() == 4
        pg.screenshot(path=str(SHOTS / "advice-trna.png"), full_page=True)

        three = f">one\n{TRNA_PHE}\n>two\n{TRNA_PHE[:40]}\n>three\nGGGGAAAACCCCAAAAGGGGAAAACCCC\n"
        _submit(pg, url, three)
        _wait_done(pg, 300)
        assert pg.locator("section.advice-query").count() == 3

        before = advice_site["stack"].manage("shell", "-c", COUNT).stdout
        for text, words in [
            ("ACGUXACGUACGU", "is not a nucleotide"),
            ("A" * 1001, "has 1001 nt; at most 1000"),
            ("", "the input is empty"),
        ]:
            _submit(pg, url, text)
            assert words in pg.locator("#advice-error").inner_text()
        # a 1 MB paste: past the textarea's maxlength, as a script or another client would send it
        pg.goto(url + "/advice/")
        pg.evaluate("t => { const a = document.querySelector('#sequences'); a.removeAttribute('maxlength');"
                    " a.value = t; }", "ACGU" * 262_144)
        pg.click("#advice-form button[type=submit]")
        pg.wait_for_load_state("domcontentloaded")
        assert "at most 20,000 are accepted" in pg.locator("#advice-error").inner_text()
        assert advice_site["stack"].manage("shell", "-c", COUNT).stdout == before

        # the queue cap (3 runs here): with no worker, one sequence waits for its three runs; the next
        # request is told the advisor is busy and when to come back, and nothing of it is stored
        advice_site["stack"].services["worker-testrun"].stop()
        _submit(pg, url, TRNA_PHE)
        assert pg.locator("#advice-status").get_attribute("data-status") == "running"
        _submit(pg, url, TRNA_PHE)
        busy = pg.locator("#advice-error").inner_text()
        assert "The advisor is busy (3 runs waiting); try again in about" in busy
        after = advice_site["stack"].manage("shell", "-c", COUNT).stdout.split()
        assert int(after[-1]) == int(before.split()[-1]) + 1
        # the refused forms are answered 400 or 429, which the browser logs; nothing else may be
        expected = ("status of 400 (Bad Request)", "status of 429 (Too Many Requests)")
        unexpected = [e for e in pg.errors if not any(x in e for x in expected)]
        assert not unexpected, unexpected
    finally:
        context.close()


def _post_advice(url: str, text: str) -> tuple[int, dict]:
    request = urllib.request.Request(url + "/api/advice/", data=json.dumps({"sequences": text}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_one_address_is_limited_through_the_stack(advice_site):
    """The per-address limit through gunicorn and the database counters: all requests here come from
    127.0.0.1, so the one refused is the one past PER_ADDRESS stored requests (refused inputs and "busy"
    answers are not counted), and it is stored nowhere."""
    url, stack = advice_site["url"], advice_site["stack"]
    stack.start_worker("testrun", name="worker-testrun-again", concurrency=2)  # the test above stopped one
    short = "GGGGAAAACCCCAAAAGGGGAAAACCCC"
    answers = []
    for _ in range(PER_ADDRESS + 2):
        deadline = time.monotonic() + 120
        while True:  # one request's runs at a time: the queue cap (3 waiting runs) is not what is tested
            status, body = _post_advice(url, short)
            if not (status == 429 and "busy" in body.get("error", "")) or time.monotonic() > deadline:
                break
            time.sleep(1)
        answers.append((status, body))
        if status != 202:
            break
        done = time.monotonic() + 120
        while time.monotonic() < done:
            with urllib.request.urlopen(body["api_url"], timeout=60) as response:
                if not json.loads(response.read())["pending"]:
                    break
            time.sleep(1)
    status, body = answers[-1]
    assert status == 429, answers
    assert f"At most {PER_ADDRESS} requests per 60 minutes from one address" in body["error"]
    stored = int(stack.manage("shell", "-c", COUNT).stdout.split()[-1])
    assert stored == PER_ADDRESS  # the refused one was not stored
