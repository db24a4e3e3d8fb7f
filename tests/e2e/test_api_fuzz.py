"""Fuzz the read-only API against its own OpenAPI schema (schemathesis): no request may end in a 5xx.

Runs in-process against the Django WSGI application on the test database filled with the site data, so
path ids and filter values hit real rows as well as missing ones. Also checks that responses conform to the
schema (status codes and bodies).
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = [pytest.mark.e2e, pytest.mark.django_db, pytest.mark.timeout(120)]

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_never_fails_and_conforms_to_its_schema(case, site):
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])


# -- every URL pattern and filter, over HTTP, on gunicorn + PostgreSQL (issue 11) --------------------------
# PostgreSQL is where odd values hurt most (64-bit id columns, no NUL in text), so this fuzz runs against the
# production stack: every path parameter of every URL pattern and every query parameter of every page and API
# endpoint gets non-ASCII digits, huge numbers, NUL and friends; the snapshot download gets odd Range headers.
# No response may be a server error.

# One value of each kind that broke a parser (non-ASCII digits, sign, overflow, huge, NUL, traversal, long
# text, impossible date); more of one kind added minutes to the test (154 s) without a failure of its own.
ODD = ["²", "٣", "１", "-1", "9" * 19, "9" * 5000, "%00", "..", "x" * 300, "2024-02-30"]
# Query parameters get the ones that broke parsers (fewer: there are many more parameters than path parts).
ODD_QUERY = ["²", "٣", "-1", "9" * 19, "9" * 5000, "\x00", "", "x" * 300, "2024-13-45"]
GOOD = {
    "dataset": "rnastrand", "slug": "rnastrand", "subset": "all", "definition": "extended", "pk": "1",
    "a": "1", "b": "2", "number": "1", "format": "json", "name": "GoodFold", "method_a": "GoodFold",
    "method_b": "MidFold", "kind": "seed", "fmt": "sto",
}
PAGE_QUERY = ["snapshot", "sort", "dir", "kind", "q", "subset", "page"]
# parameters that only some pages read, by path prefix (the target browser's filters, the owner pages' and
# owner API's filters, the blind track's pair definition, the pairwise picks, snapshot downloads)
BROWSER = ["dataset", "class", "family", "min_length", "max_length", "pseudoknotted"]
EXTRA_QUERY = {
    "/targets/": BROWSER, "/datasets/": BROWSER, "/blind/": ["definition"],
    "/rankings/": ["a", "b", "definition"], "/snapshots/": ["ranking"],
    "/account/": ["status", "with", "definition"], "/api/owner/": ["status", "dataset"],
}
# A signed-in method owner with a development method, an API token and a blind week, so that the owner pages,
# the owner API and the blind week pages are fuzzed past their login / lookup (not only their 302 / 404).
OWNER_SETUP = (
    "import datetime as dt; from django.contrib.auth.models import User; from django.utils import timezone; "
    "from comparna.owners.models import ApiToken, OwnerProfile; from predictors.models import Method; "
    "from comparna.blind.prerelease import ensure_blind_dataset, ensure_week; "
    "u = User.objects.create_user('fuzzer', 'fuzzer@example.org', 'fuzz-pass-1234'); "
    "OwnerProfile.objects.create(user=u, email_confirmed_at=timezone.now(), approved_at=timezone.now()); "
    "m = Method.objects.get(name='NewFold'); m.owner = u; m.visibility = 'development'; m.save(); "
    "ensure_blind_dataset(); w = ensure_week(dt.date(2024, 6, 5)); "
    "print('FUZZ', m.pk, ApiToken.issue(user=u, name='fuzz')[1], w.release_date.isoformat())"
)
RANGES = [
    "bytes=" + "9" * 4400 + "-", "bytes=-" + "9" * 4400, "bytes=0-" + "9" * 4400, "bytes=²-", "bytes=٣-٤",
    "bytes=5-1", "bytes=0-0,5-9", "bytes=-0", "bytes=0-", "bytes=-", "bytes=", "items=0-1", "bytes=1-2-3",
    "bytes=\t0-1", "bytes=99999999999999999999-",
]


def _patterns() -> list[tuple[str, list[str]]]:
    """(URL template with {name} slots, names) of every non-admin URL pattern."""
    import re

    from django.urls import URLResolver, get_resolver

    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            else:
                yield prefix + str(p.pattern)

    out = []
    for raw in walk(get_resolver().url_patterns):
        if raw.startswith("admin/") or "drf_format_suffix" in raw:
            continue
        template = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", raw)  # regex groups (the API router's)
        template = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", template)  # path converters
        names = re.findall(r"{(\w+)}", template)
        template = template.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
        out.append(("/" + template, names))
    return out


@pytest.fixture(scope="module")
def fuzz_site():
    from tests.e2e.stack import production_stack

    # one Django process for the site data, the snapshot and the owner (each process takes ~5 s to start)
    setup = (
        "from django.core.management import call_command; from tests.web_data import build_site_data; "
        "build_site_data(); call_command('make_snapshot', 'rnastrand'); " + OWNER_SETUP
    )
    with production_stack() as stack:
        line = stack.manage("shell", "-c", setup).stdout.split("FUZZ ")[1].split()
        yield {"url": stack.start_web(), "method": line[0], "token": line[1], "day": line[2]}


@pytest.mark.timeout(900)
def test_fuzz_every_url_pattern_filter_and_range_header_gives_no_server_error(fuzz_site):
    import concurrent.futures
    import re
    import threading
    import time

    import requests

    from tests.e2e.test_owners_stack import login

    base = fuzz_site["url"]
    owner = login(base, "fuzzer", "fuzz-pass-1234")
    owner_pages = {"Cookie": "; ".join(f"{k}={v}" for k, v in owner.cookies.items())}
    owner_api = {"Authorization": "Token " + fuzz_site["token"]}
    home = requests.get(base + "/account/", headers=owner_pages, timeout=30, allow_redirects=False)
    assert home.status_code == 200, home.status_code
    schema = requests.get(base + "/api/schema/?format=json", timeout=30).json()
    api_query = {
        path: [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"] + ["page", "page_size"]
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if method == "get"
    }
    requests_to_make: list[tuple[str, dict, dict]] = []
    patterns = _patterns()
    for template, names in patterns:
        good = {n: GOOD.get(n, "1") for n in names} | ({"day": fuzz_site["day"]} if "day" in names else {})
        path = template.format(**good)
        if path.startswith("/api/"):
            query = api_query.get(re.sub(r"/1/", "/{id}/", path), ["page", "page_size"])
        else:
            query = list(PAGE_QUERY)
        query += [q for prefix, extra in EXTRA_QUERY.items() if path.startswith(prefix) for q in extra]
        # anonymously, and as the owner (their method's id) where the pattern is an owner's page or API
        as_whom = [({}, good)]
        if template.startswith("/account/") and "logout" not in template:
            as_whom.append((owner_pages, good | ({"pk": fuzz_site["method"]} if "pk" in names else {})))
        elif template.startswith("/api/owner/"):
            as_whom.append((owner_api, good | ({"pk": fuzz_site["method"]} if "pk" in names else {})))
        for headers, values in as_whom:
            for name in names:
                for odd in ODD:
                    requests_to_make.append((template.format(**{**values, name: odd}), {}, headers))
            for q in query:
                for odd in ODD_QUERY:
                    requests_to_make.append((template.format(**values), {q: odd}, headers))
    # the newer pages are in the walk (a new URL pattern is fuzzed without editing this test)
    walked = {template for template, _ in patterns}
    for page in ("/blind/{day}/", "/account/methods/{pk}/", "/api/owner/methods/{pk}/scores/",
                 "/feeds/rankings.atom", "/api/blind/weeks/"):
        assert page in walked, sorted(walked)
    download = "/snapshots/rnastrand/1/download"
    for header in RANGES:
        requests_to_make.append((download, {}, {"Range": header}))
        requests_to_make.append((download, {}, {"Range": header, "If-Range": "²"}))
    requests_to_make.append((download, {}, {"If-None-Match": "9" * 5000}))

    # the schema lists some query parameters twice (e.g. page, page_size): each request is made once
    unique = {(path, tuple(q.items()), tuple(h.items())): (path, q, h) for path, q, h in requests_to_make}
    requests_to_make = list(unique.values())
    local = threading.local()
    failures: list[str] = []
    statuses: dict[int, int] = {}

    def fetch(item):
        path, params, headers = item
        session = getattr(local, "session", None) or requests.Session()
        local.session = session
        raw_headers = {k: v.encode("utf-8") for k, v in headers.items()}  # non-Latin-1 digits too
        r = session.get(base + path, params=params, headers=raw_headers, timeout=60, stream=True)
        r.close()
        return item, r.status_code

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for (path, params, headers), status in pool.map(fetch, requests_to_make):
            statuses[status] = statuses.get(status, 0) + 1
            # /readyz answers 503 by design while a worker or beat is missing (this stack runs none)
            if status >= 500 and not (status == 503 and path == "/readyz"):
                failures.append(f"{status} {path} {params} {headers}"[:300])
    took = time.monotonic() - start
    print(f"fuzz: {len(requests_to_make)} requests in {took:.0f} s, statuses {sorted(statuses.items())}")
    assert len(requests_to_make) > 1500 and statuses.get(200, 0) > 100, statuses
    # the signed-in pass reached the owner's pages (not just the login redirect)
    assert owner.get(f"{base}/account/methods/{fuzz_site['method']}/", timeout=30).status_code == 200
    summary = f"{len(failures)} server errors of {len(requests_to_make)} requests:\n"
    assert failures == [], summary + "\n".join(failures[:40])
