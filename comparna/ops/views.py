"""``/healthz``, ``/readyz`` and ``/metrics`` (docs/operations.md)."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.views import View

from comparna.ops.health import readiness
from comparna.ops.metrics import CONTENT_TYPE, metrics_allowed, render_metrics

NO_STORE = "no-store"


class HealthzView(View):
    """Liveness: the web process answers (no database, broker or disk access)."""

    def get(self, request):
        response = JsonResponse({"ok": True})
        response["Cache-Control"] = NO_STORE
        return response


class ReadyzView(View):
    """Readiness: database, broker, a worker of each queue, beat's last tick, free disk; 200 or 503.

    The details (database vendor, live workers, free disk per directory) only to whoever may read
    ``/metrics`` (its token or allowed networks, issue 36); anyone else gets the status alone."""

    def get(self, request):
        report = readiness()
        allowed = metrics_allowed(
            authorization=request.headers.get("Authorization", ""),
            remote_addr=request.META.get("REMOTE_ADDR", ""),
        )
        body = report if allowed else {"ok": report["ok"]}
        response = JsonResponse(body, status=200 if report["ok"] else 503)
        response["Cache-Control"] = NO_STORE
        # A 503 here is an answer, not a server error: no "Service Unavailable" error line per probe.
        response._has_been_logged = True
        return response


class MetricsView(View):
    """Prometheus text format, for a Bearer token or an allowed network only."""

    def get(self, request):
        allowed = metrics_allowed(
            authorization=request.headers.get("Authorization", ""),
            remote_addr=request.META.get("REMOTE_ADDR", ""),
        )
        if not allowed:
            response = HttpResponse("forbidden\n", status=403, content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        response = HttpResponse(render_metrics(), content_type=CONTENT_TYPE)
        response["Cache-Control"] = NO_STORE
        return response
