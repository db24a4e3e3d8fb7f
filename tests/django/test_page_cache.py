"""Whole public pages are cached for anonymous visitors under a data version the background refreshes replace
(issue 28): a warm page is one cache read, and never older than the last refresh."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.http import HttpResponse
from django.test import Client, RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from comparna.middleware import PublicPageCacheMiddleware
from comparna.services.pages.common import bump_data_version, data_version
from comparna.tasks import refresh_method_summaries_task, refresh_tallies_task
from predictors.models import Method
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def _queries(client: Client, path: str, **headers) -> tuple[int, bytes]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path, **headers)
    assert response.status_code == 200, path
    return len(queries), response.content


@override_settings(PAGE_CACHE_S=60)
def test_anonymous_pages_are_served_from_the_cache_until_a_refresh(world):  # noqa: F811
    cache.clear()
    anon = Client()
    beta = Method.objects.get(name="Beta")
    pages = (reverse("home"), reverse("methods"), reverse("method-detail", args=[beta.pk]), "/api/scores/")
    for path in pages:
        first, body = _queries(anon, path)
        assert first > 0
        again, cached_body = _queries(anon, path)
        assert again == 0 and cached_body == body, path  # one cache read, the same page
    # a background refresh makes a new data version: the next request computes the page again
    before = data_version()
    refresh_tallies_task()
    assert data_version() != before
    assert _queries(anon, reverse("methods"))[0] > 0
    # the method page after its figures are computed shows them at once, not the cached "being computed"
    page = anon.get(reverse("method-detail", args=[beta.pk])).content.decode()
    assert "Being computed" in page
    assert refresh_method_summaries_task() > 0
    assert "Being computed" not in anon.get(reverse("method-detail", args=[beta.pk])).content.decode()


@override_settings(PAGE_CACHE_S=60)
def test_visitors_with_cookies_or_credentials_and_private_pages_are_never_cached(world):  # noqa: F811
    cache.clear()
    bump_data_version()
    path = reverse("methods")
    Client().get(path)  # cached for anonymous visitors
    signed_in = Client()
    signed_in.cookies["sessionid"] = "anything"
    assert _queries(signed_in, path)[0] > 0
    assert _queries(Client(), path, HTTP_AUTHORIZATION="Token crna_x")[0] > 0
    # JSON and HTML answers of one address are cached apart
    api = "/api/methods/"
    html = Client().get(api, HTTP_ACCEPT="text/html").content
    assert Client().get(api, HTTP_ACCEPT="application/json").content != html
    # an answer that sets a cookie (a form's CSRF cookie), a private or failed one is not stored
    ok = HttpResponse("page")
    assert PublicPageCacheMiddleware._cacheable_response(ok)
    with_cookie = HttpResponse("form")
    with_cookie.set_cookie("csrftoken", "x")
    private = HttpResponse("mine", headers={"Cache-Control": "private"})
    for response in (with_cookie, private, HttpResponse(status=404)):
        assert not PublicPageCacheMiddleware._cacheable_response(response)
    # the owners' and staff's pages are not cached even for a visitor without cookies
    assert _queries(Client(), reverse("owner-login"))[0] >= 0
    assert not PublicPageCacheMiddleware._cacheable_request(RequestFactory().get("/account/login/"))
    assert PublicPageCacheMiddleware._cacheable_request(RequestFactory().get("/methods/"))


@override_settings(PAGE_CACHE_S=0)
def test_off_when_zero(world):  # noqa: F811
    path = reverse("methods")
    Client().get(path)
    assert _queries(Client(), path)[0] > 0


BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@override_settings(PAGE_CACHE_S=60)
def test_the_browsable_api_is_cached_for_anonymous_visitors_and_holds_no_token(world):  # noqa: F811
    cache.clear()
    bump_data_version()
    for path in ("/api/methods/", "/api/rankings/"):
        first = Client().get(path, HTTP_ACCEPT=BROWSER)
        assert first.status_code == 200 and first["Content-Type"].startswith("text/html")
        # nothing in it needs a CSRF token (the endpoints only read): no token, no cookie, so it is kept
        assert not first.cookies and '"csrfToken": ""' in first.content.decode()
        again, body = _queries(Client(), path, HTTP_ACCEPT=BROWSER)
        assert again == 0 and body == first.content, path
        # the JSON answer of the same address is its own entry
        assert Client().get(path, HTTP_ACCEPT="application/json")["Content-Type"] == "application/json"


@override_settings(PAGE_CACHE_S=60)
def test_a_csrf_cookie_alone_is_anonymous_but_no_token_or_signed_in_page_is_ever_shared(world):  # noqa: F811
    from django.conf import settings
    from django.contrib.auth.models import User

    cache.clear()
    bump_data_version()
    path = "/api/methods/"
    # a visitor who only carries the CSRF cookie another page's form left is served the shared page
    with_csrf = Client()
    with_csrf.cookies[settings.CSRF_COOKIE_NAME] = "a" * 32
    Client().get(path, HTTP_ACCEPT=BROWSER)
    assert _queries(with_csrf, path, HTTP_ACCEPT=BROWSER)[0] == 0
    # a signed-in user's browsable page (their name, a CSRF token) is neither served from nor kept in it
    cache.clear()
    bump_data_version()
    owner = User.objects.create_user("page-cache-owner", "o@x.org", "pw")
    signed_in = Client()
    signed_in.force_login(owner)
    mine = signed_in.get(path, HTTP_ACCEPT=BROWSER).content.decode()
    assert "page-cache-owner" in mine and '"csrfToken": ""' not in mine
    assert _queries(signed_in, path, HTTP_ACCEPT=BROWSER)[0] > 0  # never served from the cache
    for visitor in (Client(), with_csrf):
        page = visitor.get(path, HTTP_ACCEPT=BROWSER).content.decode()
        assert "page-cache-owner" not in page and '"csrfToken": ""' in page
    # a page that holds a token (a form) sets the cookie (Django's get_token): never kept, so a visitor with
    # a CSRF cookie gets a page with a token of their own secret, never another visitor's
    from django.middleware.csrf import CsrfViewMiddleware, get_token

    calls = []

    def form_page(request):
        calls.append(request.COOKIES[settings.CSRF_COOKIE_NAME])
        return HttpResponse(get_token(request))

    stack = PublicPageCacheMiddleware(CsrfViewMiddleware(form_page))
    for secret in ("b" * 32, "c" * 32):
        response = stack(_with_cookies({settings.CSRF_COOKIE_NAME: secret}))
        assert settings.CSRF_COOKIE_NAME in response.cookies
    assert calls == ["b" * 32, "c" * 32]  # each rendered for its own visitor
    cacheable = PublicPageCacheMiddleware._cacheable_request
    assert not cacheable(_with_cookies({"sessionid": "x", settings.CSRF_COOKIE_NAME: "y"}))
    assert cacheable(_with_cookies({settings.CSRF_COOKIE_NAME: "y"}))


def _with_cookies(cookies: dict):
    request = RequestFactory().get("/methods/")
    request.COOKIES = cookies
    return request


def test_the_browsable_page_links_its_json_as_the_template_urlize_did():
    import json

    from django.utils.html import urlize

    from comparna.api.renderers import linked

    text = json.dumps(
        {"next": "http://testserver/api/rankings/?page=2&page_size=5", "url": "/api/rankings/3/",
         "citation": "see https://doi.org/10.1/x. or www.rna.org, mail me@x.org",
         "odd": '<b>"q"</b> \\ a.b:c',
         "rows": [{"method": "Fold 2.4", "mcc": 0.51234, "computed_at": "2026-11-26T10:00:00Z"}] * 3},
        indent=4,
    )
    assert linked(text) == urlize(text, nofollow=True, autoescape=True)
    assert linked(text).count("<a ") == 4
