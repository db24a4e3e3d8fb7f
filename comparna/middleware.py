"""HTTP middleware of the project."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.middleware.gzip import GZipMiddleware


class ContentSecurityPolicyMiddleware:
    """Send ``settings.CONTENT_SECURITY_POLICY`` with every response that does not set its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy:
            response.headers.setdefault("Content-Security-Policy", self.policy)
        return response


class RejectNulMiddleware:
    """400 for a request whose path or query string holds a NUL character.

    PostgreSQL text cannot hold NUL: such a value reaching a query (a slug, a method name, a filter)
    would raise in the database driver, i.e. a 500 instead of "bad request".
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or "\x00" in request.META.get("QUERY_STRING", "") or any(
            "\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()
        ):
            return HttpResponseBadRequest("NUL characters are not allowed in URLs")
        return self.get_response(request)


#: Paths never served from the page cache: signed-in, owner, staff, upload, probe and embargoed pages.
UNCACHED_PREFIXES = ("/admin/", "/account/", "/api/owner/", "/api/blind/", "/blind/", "/submit/", "/healthz",
                     "/readyz", "/metrics", "/static/")
#: The largest response kept in the page cache (bytes).
PAGE_CACHE_MAX_BYTES = 4 * 1024 * 1024


class PublicPageCacheMiddleware:
    """Serve anonymous GETs of public pages from the shared cache for ``settings.PAGE_CACHE_S`` seconds.

    The key holds the scheme, host, path, query and ``Accept`` header, and the data version
    (:func:`comparna.services.pages.common.data_version`), which every background refresh (tallies, rankings,
    summaries) replaces: a cached page is never older than the last refresh, nor than ``PAGE_CACHE_S``.
    Only requests without credentials and without cookies other than the CSRF one are served or stored (a
    signed-in owner, staff or a token sees their own pages; a CSRF cookie alone, left by any page with a form,
    identifies nobody), and only complete 200 answers that set no cookie: a page that holds a CSRF token sets
    the cookie (Django's ``get_token``), so it is never stored and no visitor's token is shown to another.
    ``PAGE_CACHE_S = 0`` turns it off.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seconds = getattr(settings, "PAGE_CACHE_S", 0)
        if not seconds or not self._cacheable_request(request):
            return self.get_response(request)
        from django.core.cache import cache

        key = self._key(request)
        response = cache.get(key)
        if response is not None:
            return response
        response = self.get_response(request)
        if self._cacheable_response(response):
            cache.set(key, response, seconds)
        return response

    @staticmethod
    def _cacheable_request(request: HttpRequest) -> bool:
        return (
            request.method in ("GET", "HEAD")
            and request.COOKIES.keys() <= {settings.CSRF_COOKIE_NAME}
            and "HTTP_AUTHORIZATION" not in request.META
            and not request.path.startswith(UNCACHED_PREFIXES)
        )

    @staticmethod
    def _cacheable_response(response: HttpResponse) -> bool:
        return (
            response.status_code == 200
            and not response.streaming
            and not response.cookies
            and "private" not in response.get("Cache-Control", "")
            and "no-store" not in response.get("Cache-Control", "")
            and len(response.content) <= PAGE_CACHE_MAX_BYTES
        )

    @staticmethod
    def _key(request: HttpRequest) -> str:
        import hashlib

        from comparna.services.pages.common import data_version

        what = "\n".join((request.method, request.scheme, request.get_host(), request.get_full_path(),
                          request.META.get("HTTP_ACCEPT", "")))
        return f"comparna:page:{data_version()}:{hashlib.sha256(what.encode()).hexdigest()}"


class PublicGZipMiddleware(GZipMiddleware):
    """Django's gzip compression (issue 37: pages were sent uncompressed), for responses that carry no secret.

    BREACH recovers a secret from the compressed size of responses that hold both the secret and text an
    attacker can put in the request; compressing public pages only avoids it. A response is sent
    uncompressed when it holds a CSRF token (the page called Django's ``get_token``, which sets the CSRF
    cookie: a form), sets any other cookie, or when the visitor is signed in (an owner's or staff's pages).
    Everything anonymous visitors read — rankings, methods, targets, feeds, the API's JSON — is compressed;
    streamed responses (archive downloads, already compressed, and their byte ranges) are not
    (docs/operations.md).
    """

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        # a page that holds a CSRF token sets the CSRF cookie (Django's get_token); any cookie set: not public
        if response.cookies or request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
            return response
        # streamed files (archives, already compressed; byte ranges must stay exact) are sent as they are
        if response.streaming or response.status_code == 206:
            return response
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return response
        return super().process_response(request, response)
