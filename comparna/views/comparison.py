"""The comparison of two methods on a ranking snapshot: the page, the pick form and the CSV of the pair.

(The zip of the pair's data is in :mod:`comparna.views.comparison_downloads`.)
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from comparna.params import ascii_int
from comparna.services.pages.common import method_directory, report_value
from comparna.services.pages.comparison import (
    comparison_csv,
    expected_common,
    per_target_rows,
    ready_comparison,
)
from comparna.services.pages.figures import overview_figure
from comparna.services.pages.ranking_status import ranking_live
from comparna.services.pages.rankings import ranked_rows, stored_ranking_rows
from comparna.views.rankings import find_snapshot
from predictors.models import Method


class MethodComparisonView(TemplateView):
    """Two methods on their common targets of a subset: counts, the test, paired statistics, pictures."""

    template_name = "comparna/compare.html"

    def render_to_response(self, context, **kwargs):
        response = super().render_to_response(context, **kwargs)
        if context["comp"] is None:  # "being computed": never kept by a cache, the next request may show it
            response["Cache-Control"] = "no-store"
        return response

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        snap = find_snapshot(
            self.request, dataset=kwargs["dataset"], subset=kwargs["subset"], definition=kwargs["definition"]
        )
        a = get_object_or_404(Method.objects.public(), pk=kwargs["a"])
        b = get_object_or_404(Method.objects.public(), pk=kwargs["b"])
        if a.pk == b.pk:
            raise Http404("compare two different methods")
        # a large pair is computed by a background task on its first request; meanwhile the page says so
        comp = ready_comparison(snapshot=snap, a=a, b=b, page=True)  # its rows: those the page shows
        if comp is None:
            self.template_name = "comparna/compare_pending.html"
        directory = method_directory()
        names = [r["method"] for r in report_value(snap, "methods") or []]
        # the snapshot's methods in rank order, then the other active public methods (an empty state there)
        picker = [(n, directory[n]["pk"]) for n in names if n in directory]
        others = Method.objects.public().filter(active=True).exclude(name__in=names).order_by("name")
        picker += [(m.name, m.pk) for m in others]
        picker += [(m.name, m.pk) for m in (a, b) if (m.name, m.pk) not in picker]
        ctx.update(
            picker=picker,
            dataset=snap.dataset,
            subset=snap.subset,
            definition=snap.definition,
            snapshot=snap,
            a=a,
            b=b,
            comp=comp,
            per_target=per_target_rows(comp.rows) if comp is not None else [],
            expected_common=expected_common(snap, a.name, b.name),
            state=ranking_live(snap)["state"] if comp is not None else None,
            overview_json=self.overview(snap, a, b) if comp is not None else None,
            fp_kinds=[
                (
                    "fp_inconsistent",
                    "inconsistent",
                    "a base of the pair has another partner in the reference",
                ),
                ("fp_contradicting", "contradicting", "the pair crosses a reference pair"),
                ("fp_compatible", "compatible (ε)", "neither: it could be added to the reference; neutral"),
            ],
        )
        return ctx

    @staticmethod
    def overview(snap, a: Method, b: Method) -> str | None:
        """The subset's PPV–sensitivity overview with the two methods highlighted, from the rows stored in the
        background (store_ranking_rows); none until they are stored: computing them reads every score of the
        subset, which no request does for a figure beside the comparison."""
        rows = stored_ranking_rows(snap)
        return overview_figure(ranked_rows(rows), highlight=(a.name, b.name)) if rows else None


class MethodComparisonPickView(View):
    """The method picker's target: ``?a=&b=&snapshot=`` redirects to that comparison page."""

    def get(self, request, dataset: str, subset: str, definition: str):
        a, b = ascii_int(request.GET.get("a", "")), ascii_int(request.GET.get("b", ""))
        if a is None or b is None:
            raise Http404("choose two methods")
        public = Method.objects.public()
        a, b = get_object_or_404(public, pk=a).pk, get_object_or_404(public, pk=b).pk
        if a == b:
            raise Http404("compare two different methods")
        snap = find_snapshot(request, dataset=dataset, subset=subset, definition=definition)
        return redirect(
            reverse("method-comparison", args=[dataset, subset, definition, a, b]) + f"?snapshot={snap.pk}"
        )


def compared_pair(request, *, dataset: str, subset: str, definition: str, a: int, b: int):
    """The snapshot, the two public methods and their comparison behind a comparison page's downloads: the
    computed or small comparison (:func:`ready_comparison`), None while a background task computes it (a
    download never computes a large pair in the request)."""
    snap = find_snapshot(request, dataset=dataset, subset=subset, definition=definition)
    public = Method.objects.public()
    ma, mb = get_object_or_404(public, pk=a), get_object_or_404(public, pk=b)
    if ma.pk == mb.pk:
        raise Http404("compare two different methods")
    return snap, ma, mb, ready_comparison(snapshot=snap, a=ma, b=mb)


def being_computed(ma: Method, mb: Method) -> HttpResponse:
    """A download's answer while its comparison is computed in the background: 503, try again shortly."""
    response = HttpResponse(
        f"The comparison of {ma.name} and {mb.name} is being computed; try again in a minute.\n",
        status=503, content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = "30"
    response["Cache-Control"] = "no-store"
    return response


class MethodComparisonCsvView(View):
    """The per-target data behind a comparison page, as CSV."""

    def get(self, request, dataset: str, subset: str, definition: str, a: int, b: int):
        snap, ma, mb, comp = compared_pair(
            request, dataset=dataset, subset=subset, definition=definition, a=a, b=b
        )
        if comp is None:
            return being_computed(ma, mb)
        response = HttpResponse(comparison_csv(comp), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="compare-{dataset}-{subset}-{definition}-{ma.pk}-{mb.pk}.csv"'
        )
        return response
