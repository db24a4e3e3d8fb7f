"""HTTP middleware of the project."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


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
