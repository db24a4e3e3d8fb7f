"""Method owners on the production stack: PostgreSQL, Redis, Celery workers, gunicorn, Podman, e-mails to
files, web services on loopback, and Chromium for the screenshots.

One walk through everything issue 17 promises: sign-up → the e-mailed confirmation link → staff approval in
the admin → development methods of every kind, each registered through the page with a worker's test run
(a command in the sandbox; an image archive built from the registry-free base image; web services: a good
one, one answering later through the callback, one that turns slow, one that turns to garbage, one that goes
down) → the workers run them → outcomes and scores visible to the owner only (pages and API with their token;
a second owner gets 404s) → publication requested and approved → in the rankings and the Atom feed → the
owner's e-mail digest. Screenshots of the owner's pages and the feed go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urljoin

import psycopg
import pytest
import requests

from predictors.forms import TEST_SEQUENCE
from tests.e2e.stack import REPO, free_port, production_stack, wait_for
from tests.support.local_predictor_service import PredictorService

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

SHOTS = REPO / "test-artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
MFE_ARGV = '["{python}", "-m", "predictors.programs.vienna_fold", "--mode", "mfe", "{fasta}"]'
PASSWORD = "a long passphrase 42"


def csrf(session: requests.Session, url: str) -> tuple[str, str]:
    page = session.get(url, timeout=30)
    assert page.status_code == 200, (url, page.status_code, page.text[:500])
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1), page.text


def post_form(session, base, path, data, files=None, *, referer=None) -> requests.Response:
    token, _ = csrf(session, base + path)
    return session.post(
        base + path,
        data={**data, "csrfmiddlewaretoken": token},
        files=files,
        headers={"Referer": referer or base + path},
        allow_redirects=False,
        timeout=300,
    )


def login(base: str, username: str, password: str, path: str = "/account/login/") -> requests.Session:
    s = requests.Session()
    r = post_form(s, base, path, {"username": username, "password": password, "next": "/account/"})
    assert r.status_code == 302, r.text[:2000]
    return s


def one(db: str, sql: str, *args):
    with psycopg.connect(db) as conn:
        return conn.execute(sql, args).fetchone()[0]


def states(db: str, method: str) -> dict[str, int]:
    with psycopg.connect(db) as conn:
        return dict(
            conn.execute(
                "select p.status, count(*) from predictors_prediction p join predictors_methodversion v on "
                "v.id = p.method_version_id join predictors_method m on m.id = v.method_id where m.name = %s "
                "group by p.status",
                (method,),
            ).fetchall()
        )


FORM = {
    "kind": "command",
    "program": "p",
    "version": "1",
    "input": "single",
    "output_format": "dot-bracket",
    "argv": "",
    "output_file": "",
    "endpoint": "",
    "max_concurrent": 2,
    "requests_per_minute": 600,
    "retries": 1,
    "upload_window_h": 1,
    "max_length": 1000,
    "time_limit_s": 20,
    "memory_limit_mb": 1024,
    "test_sequence": TEST_SEQUENCE,
    "tested": "",
    "trial": "",
    "image_archive": "",
}


def register(session, base, data: dict, files=None) -> tuple[int, str]:
    """Through the page: test run (a worker runs it; polled like the page's script does), then save."""
    form = {**FORM, **data, "_test": "Test run"}
    r = post_form(session, base, "/account/methods/new/", form, files)
    assert r.status_code == 200, r.text[-3000:]
    poll = re.search(r'data-poll="([^"]+)"', r.text).group(1)
    trial = re.search(r'name="trial" value="([^"]+)"', r.text).group(1)
    sha = re.search(r'<option value="([0-9a-f]{64})" selected>', r.text)
    result = wait_for(
        lambda: (j := session.get(base + poll, timeout=30).json())["status"] in ("done", "expired") and j,
        timeout=240,
        interval=0.5,
        what=f"the test run of {data['name']}",
    )
    assert result["tested"], result["html"]
    form = {**FORM, **data, "trial": trial, "tested": result["tested"], "_save": "Save"}
    if sha:
        form["image_archive"] = sha.group(1)
    r = post_form(session, base, "/account/methods/new/", form)
    assert r.status_code == 302, r.text[-3000:]
    return int(re.search(r"/account/methods/(\d+)/", r.headers["Location"]).group(1)), result["html"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    mail_dir = tmp_path_factory.mktemp("mail")
    static_root = Path(tempfile.mkdtemp(prefix="comparna-static-"))
    port = free_port()
    env = {
        "COMPARNA_EMAIL_BACKEND": "file",
        "COMPARNA_EMAIL_FILE_PATH": str(mail_dir),
        "COMPARNA_SITE_URL": f"http://127.0.0.1:{port}",
        "COMPARNA_WEBSERVICE_ALLOWED_NETWORKS": "127.0.0.0/8",
        "COMPARNA_WEBSERVICE_BACKOFF_S": "0.2",
        "COMPARNA_TEST_RUN_LIMIT_S": "30",
        "COMPARNA_STATIC_ROOT": str(static_root),
    }
    with production_stack(extra_env=env) as stack:
        stack.manage("collectstatic", "--noinput", "-v", "0")
        stack.manage(
            "shell",
            "-c",
            "from tests.web_data import build_site_data; "
            "build_site_data(n_strand=6, n_pdb=3, max_length=120)",
        )
        stack.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            f"User.objects.create_superuser('curator', 'curator@comparna.example', '{PASSWORD}')",
        )
        # test runs only, for now: the prediction worker starts once every method is registered
        stack.start_worker("testrun", concurrency=1)
        stack.start_worker("default,families", name="worker-default")
        url = stack.start_web(port)
        yield {"url": url, "stack": stack, "mail": mail_dir, "db": stack.env["DATABASE_URL"]}


def mails(mail_dir: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(mail_dir.glob("*.log")))


def test_owner_walkthrough(site, owner_image_archive, browser):
    base, db, mail_dir, stack = site["url"], site["db"], site["mail"], site["stack"]
    # -- sign-up, confirmation, approval ----------------------------------------------------------------
    s = requests.Session()
    r = post_form(
        s,
        base,
        "/account/signup/",
        {
            "username": "dana",
            "email": "dana@lab.example",
            "affiliation": "RNA lab",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert r.status_code == 200 and "signup-done" in r.text
    assert (
        post_form(
            requests.Session(), base, "/account/login/", {"username": "dana", "password": PASSWORD}
        ).status_code
        == 200
    )  # inactive: refused
    link = wait_for(
        lambda: re.search(r"(http://127\.0\.0\.1:\d+/account/confirm/\S+/)", mails(mail_dir)),
        timeout=30,
        what="the confirmation e-mail",
    ).group(1)
    assert link.startswith(base) and "confirmed" in requests.get(link, timeout=30).text
    assert "dana@lab.example" in mails(mail_dir) and "awaits approval" in mails(mail_dir)  # staff told
    owner = login(base, "dana", PASSWORD)
    assert "awaiting-approval" in owner.get(base + "/account/", timeout=30).text
    staff = login(base, "curator", PASSWORD, "/admin/login/")
    profile = one(
        db,
        "select p.id from owners_ownerprofile p join auth_user u on u.id = p.user_id "
        "where u.username = 'dana'",
    )
    r = post_form(
        staff, base, "/admin/owners/ownerprofile/", {"action": "approve", "_selected_action": profile}
    )
    assert r.status_code == 302
    wait_for(lambda: "Your account was approved" in mails(mail_dir), timeout=30, what="the approval e-mail")

    # -- a development method of every kind -------------------------------------------------------------
    with (
        PredictorService(slow_s=5, callbacks=True) as good,
        PredictorService(slow_s=5) as slow,
        PredictorService() as garbage,
        PredictorService() as down,
    ):
        ids = {}
        ids["DanaCmd"], _ = register(owner, base, {"name": "DanaCmd", "argv": MFE_ARGV})
        with open(owner_image_archive, "rb") as fh:
            ids["DanaImage"], shown = register(
                owner,
                base,
                {"name": "DanaImage", "kind": "image", "argv": "python3\n/opt/predict.py\n{fasta}"},
                files={"archive": ("dana-image.tar", fh, "application/x-tar")},
            )
        assert "image-podman" in shown
        web = {"kind": "web", "time_limit_s": 2, "retries": 1}
        ids["DanaWeb"], _ = register(owner, base, {**web, "name": "DanaWeb", "endpoint": good.url + "/fold"})
        ids["DanaAsync"], _ = register(
            owner, base, {**web, "name": "DanaAsync", "endpoint": good.url + "/accept"}
        )
        ids["DanaSlow"], _ = register(
            owner, base, {**web, "name": "DanaSlow", "endpoint": slow.url + "/switch", "max_concurrent": 1}
        )
        ids["DanaGarbage"], _ = register(
            owner, base, {**web, "name": "DanaGarbage", "endpoint": garbage.url + "/switch"}
        )
        ids["DanaDown"], _ = register(
            owner, base, {**web, "name": "DanaDown", "endpoint": down.url + "/fold"}
        )
        # after registration: one server turns slow, one answers garbage, one goes down
        slow.mode, garbage.mode = "slow", "garbage"
        down.__exit__(None, None, None)
        stack.start_worker("predict", concurrency=2)
        n_targets = one(db, "select count(*) from comparna_target")
        try:
            wait_for(
                lambda: all(not set(states(db, m)) & {"queued", "running", "awaiting"} for m in ids),
                timeout=420,
                interval=2,
                what="every owner prediction to finish",
            )
        except TimeoutError:
            pytest.fail(f"{ {m: states(db, m) for m in ids} }\n{stack.logs()}")
        # its limit of one request at a time held across two worker processes: no two runs overlap
        with psycopg.connect(db) as conn:
            spans = conn.execute(
                "select p.started_at, p.finished_at from predictors_prediction p"
                " join predictors_methodversion v on v.id = p.method_version_id"
                " join predictors_method m on m.id = v.method_id"
                " where m.name = 'DanaSlow' order by p.started_at"
            ).fetchall()
        overlapping = [(a, b) for a, b in zip(spans, spans[1:], strict=False) if a[1] > b[0]]
        assert len(spans) == n_targets and not overlapping, spans
    got = {m: states(db, m) for m in ids}
    for m in ("DanaCmd", "DanaImage", "DanaWeb"):
        assert got[m] == {"ok": n_targets}, got
    assert got["DanaAsync"] == {"ok": n_targets}, got  # every structure came back through the callback
    assert one(db, "select count(*) from predictors_prediction where uploaded") == n_targets
    assert got["DanaSlow"] == {"timeout": n_targets}, got
    assert got["DanaGarbage"] == {"unparsable": n_targets}, got
    assert got["DanaDown"] == {"failed": n_targets}, got
    assert (
        one(
            db,
            "select count(*) from predictors_prediction where error like 'unreachable: connection refused%%'"
            " and status = 'failed'",
        )
        == n_targets
    )

    # -- visible to the owner only ------------------------------------------------------------------------
    page = owner.get(f"{base}/account/methods/{ids['DanaImage']}/", timeout=30).text
    assert "development" in page and "no score yet" not in page
    r = post_form(owner, base, "/account/tokens/", {"name": "lab scripts"})
    key = re.search(r'id="token-key">(crna_[^<]+)<', r.text).group(1)
    api = requests.Session()
    api.headers["Authorization"] = f"Token {key}"
    mine = {m["name"]: m for m in api.get(base + "/api/owner/methods/", timeout=30).json()}
    assert set(mine) == set(ids) and all(m["visibility"] == "development" for m in mine.values())
    assert api.get(f"{base}/api/owner/methods/{ids['DanaCmd']}/scores/", timeout=30).json()["count"] > 0
    assert requests.get(base + "/api/scores/?method=DanaCmd", timeout=30).json()["results"] == []
    assert "DanaCmd" not in requests.get(base + "/methods/", timeout=30).text
    assert requests.get(f"{base}/methods/{ids['DanaCmd']}/", timeout=30).status_code == 404
    # a second owner: neither sees nor acts (pages and API)
    stack.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from django.utils import timezone; "
        "from comparna.owners.models import OwnerProfile; "
        f"u = User.objects.create_user('eve', 'eve@x.org', '{PASSWORD}'); "
        "OwnerProfile.objects.create(user=u, email_confirmed_at=timezone.now(), approved_at=timezone.now())",
    )
    eve = login(base, "eve", PASSWORD)
    assert eve.get(f"{base}/account/methods/{ids['DanaCmd']}/", timeout=30).status_code == 404
    r = post_form(eve, base, "/account/tokens/", {"name": "eve"})
    eve_api = {"Authorization": "Token " + re.search(r'id="token-key">(crna_[^<]+)<', r.text).group(1)}
    assert (
        requests.get(
            f"{base}/api/owner/methods/{ids['DanaCmd']}/scores/", headers=eve_api, timeout=30
        ).status_code
        == 404
    )
    assert "DanaCmd" not in requests.get(base + "/api/methods/", headers=eve_api, timeout=30).text
    token, _ = csrf(eve, f"{base}/account/")
    r = eve.post(
        f"{base}/account/methods/{ids['DanaCmd']}/action/",
        data={"action": "deactivate", "csrfmiddlewaretoken": token},
        headers={"Referer": base + "/account/"},
        allow_redirects=False,
        timeout=30,
    )
    assert r.status_code == 404 and one(db, "select active from predictors_method where name = 'DanaCmd'")

    # -- comparison with a public method, then publication -------------------------------------------------
    good_fold = one(db, "select id from predictors_method where name = 'GoodFold'")
    subset = one(
        db,
        "select s.id from comparna_subset s join comparna_dataset d on d.id = s.dataset_id "
        "where d.slug = 'rnastrand' and s.slug = 'all'",
    )
    cmp_page = owner.get(
        f"{base}/account/methods/{ids['DanaCmd']}/compare/?with={good_fold}&subset={subset}", timeout=30
    ).text
    assert re.search(r"\d+ common target", cmp_page)
    r = owner.post(
        f"{base}/account/methods/{ids['DanaCmd']}/action/",
        data={"action": "publish", "csrfmiddlewaretoken": csrf(owner, f"{base}/account/")[0]},
        headers={"Referer": base + "/account/"},
        allow_redirects=False,
        timeout=30,
    )
    assert r.status_code == 302
    assert one(
        db, "select publication_requested_at is not null from predictors_method where name = 'DanaCmd'"
    )
    r = post_form(
        staff,
        base,
        "/admin/predictors/method/",
        {"action": "make_public", "_selected_action": ids["DanaCmd"]},
    )
    assert r.status_code == 302
    stack.manage("rank")
    ranking = requests.get(base + "/rankings/rnastrand/all/extended/", timeout=30).text
    assert "DanaCmd" in ranking and "DanaImage" not in ranking
    feed = requests.get(base + "/feeds/rankings.atom", timeout=30)
    assert "DanaCmd new→" in feed.text

    # -- the digest, sent by the default worker ------------------------------------------------------------
    stack.manage("shell", "-c", "from comparna.owners.tasks import send_owner_digests_task as t; t.delay()")
    digest = wait_for(
        lambda: re.search(
            r"Subject: \[CompaRNA\] \d+ updates? on your methods.*?(?=\n-{20,}|\Z)", mails(mail_dir), re.S
        ),
        timeout=60,
        what="the digest e-mail",
    ).group(0)
    assert (
        "finished RNA STRAND" in digest
        and "DanaCmd is public" in digest
        and "DanaCmd: not ranked -> rank" in digest
    )

    screenshots(browser, base, owner, ids, good_fold, subset)
    subprocess.run(
        [
            "podman",
            "rmi",
            "--force",
            *(
                f"localhost/comparna-owner:{sha}"
                for (sha,) in psycopg.connect(db).execute("select sha256 from owners_imageupload").fetchall()
            ),
        ],
        capture_output=True,
    )


def screenshots(browser, base: str, owner: requests.Session, ids: dict, good_fold: int, subset: int) -> None:
    """The owner's pages and the feed in Chromium: no console errors, no CSP violations; saved as PNG.

    ``browser`` is the session's Chromium (tests/e2e/browser.py): Playwright's sync API runs one instance
    a thread, so a second ``sync_playwright()`` beside the shared one fails."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed (apt-get install chromium)")

    SHOTS.mkdir(parents=True, exist_ok=True)
    pages = {
        "owner-home": "/account/",
        "owner-method-image": f"/account/methods/{ids['DanaImage']}/",
        "owner-method-down": f"/account/methods/{ids['DanaDown']}/?status=failed",
        "owner-compare": f"/account/methods/{ids['DanaCmd']}/compare/?with={good_fold}&subset={subset}",
        "owner-register": "/account/methods/new/",
        "owner-tokens": "/account/tokens/",
        "owner-signup": "/account/signup/",
        "feed-rankings": "/feeds/rankings.atom",
    }
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_cookies([{"name": c.name, "value": c.value, "url": base} for c in owner.cookies])
        context.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation', "
            "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
        )
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        for name, path in pages.items():
            response = page.goto(urljoin(base, path), wait_until="networkidle")
            assert response is not None and response.status == 200, path
            if not path.endswith(".atom"):
                assert page.evaluate("window.__csp") == [], (path, page.evaluate("window.__csp"))
            page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
        assert errors == [], errors
        # the registration page's test run, polled by its script in the browser
        page.goto(urljoin(base, "/account/methods/new/"))
        page.fill("#id_name", "DanaBrowser")
        page.fill("#id_program", "rnafold")
        page.fill("#id_version", "2")
        page.fill("#id_argv", MFE_ARGV)
        page.click("input[name=_test]")
        page.wait_for_selector(".test-ok", timeout=120_000)
        assert page.is_enabled("input[name=_save]")
        page.screenshot(path=str(SHOTS / "owner-register-tested.png"), full_page=True)
        page.click("input[name=_save]")
        page.wait_for_url(re.compile(r".*/account/methods/\d+/$"))
        assert "registered as a development method" in page.content()
    finally:
        context.close()
