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
