"""The list of methods and one method's page."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.views.generic import ListView, TemplateView

from comparna.services.pages.methods import (
    PREDICTION_STATES,
    method_counts,
    method_failures,
    method_predictions,
    method_rank_history,
    method_rankings,
    method_summary,
    prediction_counts,
)
from comparna.services.pages.provenance import version_label
from predictors.core.spec import argv_placeholders
from predictors.models import Method
from predictors.training_data import training_section


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
        # counted in the background (tallies): never the method's predictions in a request
        counts = method_counts(method)
        current = method.current_version
        # computed in the background (refresh_method_summaries): never from all its scores in a request
        summary = method_summary(method)
        ctx.update(
            method=method,
            versions=list(method.versions.public()),  # approved only: the others are private (issue 36)
            current=current,
            argv=(argv := (current.spec or {}).get("argv") if current else None),
            placeholders=argv_placeholder_names(argv),
            spec=current.spec if current else {},
            history_json=method_rank_history(method),
            summary_at=summary.computed_at if summary else None,
            performance=summary.data["performance"] if summary else None,
            pr=summary.data["pr"] if summary else None,
            failures=method_failures(method),  # the newest few
            failure_counts=counts["failures"],
            failure_total=sum(counts["failures"].values()),
            counted_at=counts["counted_at"],
            rankings=(rankings := method_rankings(method)),
            rankings_provisional=any(not r["settled"] for r in rankings),
            prediction_counts=counts["predictions"],
            origins=counts["origins"],
            training=training_section(method, self.request.user),
            provenance=version_label(current),  # issue 36: who controls what produces its results
        )
        return ctx


class MethodPredictionsView(ListView):
    """The current version's predictions, 50 per page, optionally of one state, each linked to its target."""

    template_name = "comparna/method_predictions.html"
    paginate_by = 50
    context_object_name = "predictions"

    def get_queryset(self):
        self.method = get_object_or_404(Method.objects.public(), pk=self.kwargs["pk"])
        status = self.request.GET.get("status", "")
        self.status = status if status in PREDICTION_STATES else ""
        return method_predictions(self.method, status=self.status)

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        counts = prediction_counts(self.method)
        ctx.update(
            method=self.method,
            current=self.method.current_version,
            status=self.status,
            states=[(s.value, s.label, counts.get(s.value, 0)) for s in PREDICTION_STATES],
            total=sum(counts.values()),
        )
        return ctx


def argv_placeholder_names(argv: list | None) -> list[str]:
    """The placeholders the command really uses (``{fasta}``, ``{python}``…), in order, for the method page's
    sentence about them: a reader must see the names the command holds, not a generic example."""
    names: list[str] = []
    for element in argv or []:
        try:
            found = argv_placeholders(str(element))
        except ValueError:
            continue
        names += [n for n in found if n not in names]
    return names
