"""Answers ``/healthz``, ``/readyz`` and ``/metrics`` before any other middleware.

Probes and Prometheus reach the web container by its internal address over plain HTTP: answered here, the
requests skip the host check (``DJANGO_ALLOWED_HOSTS`` names the public host), the HTTPS redirect of
``COMPARNA_TLS=1`` and the session machinery. ``/metrics`` keeps its own access control (token or network).
"""

from __future__ import annotations

from comparna.ops.views import HealthzView, MetricsView, ReadyzView

ROUTES = {
    "/healthz": HealthzView.as_view(),
    "/readyz": ReadyzView.as_view(),
    "/metrics": MetricsView.as_view(),
}


class OpsEndpointsMiddleware:
    """First in ``MIDDLEWARE``: the three operations endpoints, GET only; everything else passes through."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        view = ROUTES.get(request.path_info)
        if view is None or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        return view(request)
