"""The list of methods and one method's page."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.views.generic import TemplateView

from comparna.services.pages.methods import (
    method_failures,
    method_performance,
    method_pr_curve,
    method_rank_history,
)
from predictors.models import Method


class MethodListView(TemplateView):
    """Every registered method with its input kind and current version."""

    template_name = "comparna/methods.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["methods"] = Method.objects.public().prefetch_related("versions")
        return ctx


class MethodDetailView(TemplateView):
    """Description, citation, versions, how it is run, rank history, performance, PR curve, failures."""

    template_name = "comparna/method.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        method = get_object_or_404(Method.objects.public(), pk=kwargs["pk"])
        failures, failure_counts = method_failures(method)
        current = method.current_version
        ctx.update(
            method=method,
            versions=list(method.versions.all()),
            current=current,
            argv=(current.spec or {}).get("argv") if current else None,
            spec=current.spec if current else {},
            history_json=method_rank_history(method),
            performance=method_performance(method),
            pr=method_pr_curve(method),
            failures=failures,
            failure_counts=failure_counts,
        )
        return ctx
