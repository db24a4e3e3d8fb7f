"""Targets of a dataset and one target's page."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.views import View
from django.views.generic import ListView, TemplateView

from comparna.blind.embargo import embargo_of
from comparna.models import Dataset, Target
from comparna.services.pages.target_browser import browse, facets, parse_query, sort_links
from comparna.services.pages.targets import (
    prediction_drawing,
    prediction_structure_drawing,
    reference_structure_drawing,
    target_context,
)
from predictors.models import Prediction


class TargetBrowserView(ListView):
    """Every target: full-text search, filters (dataset, class, family, length, pseudoknots), sortable
    columns, 50 per page. All state is in the query string, so every view of it is a link."""

    template_name = "comparna/targets.html"
    paginate_by = 50
    context_object_name = "targets"
    dataset: Dataset | None = None

    def get_queryset(self):
        self.query = parse_query(self.request.GET, dataset=self.dataset.slug if self.dataset else "")
        return browse(self.query)

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        page_targets = ctx["targets"]
        ctx.update(
            dataset=self.dataset,
            query=self.query,
            q=self.query.q,
            sorts=sort_links(self.query),
            pager_params=self.query.params(page=None),
            show_released=any(t.release_date for t in page_targets),
            **facets(self.dataset.slug if self.dataset else ""),
        )
        return ctx


class DatasetTargetListView(TargetBrowserView):
    """The target browser with the dataset fixed by the URL."""

    def get_queryset(self):
        self.dataset = get_object_or_404(Dataset, slug=self.kwargs["dataset"])
        return super().get_queryset()


class TargetDetailView(TemplateView):
    """Sequence, source, reference drawing and every method's prediction drawn and scored."""

    template_name = "comparna/target.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        target = get_object_or_404(Target.objects.select_related("dataset"), pk=kwargs["pk"])
        ctx["target"] = target
        ctx["pdb_chain"] = getattr(target, "pdb_chain", None) if _has_pdb_chain(target) else None
        ctx.update(target_context(target))
        ctx["blind"] = embargo_of(target)
        if ctx["blind"] and ctx["blind"]["hidden"]:
            ctx["predictions"] = []  # blind predictions are shown after the release only
        return ctx


class TargetPredictionDrawingView(View):
    """One public, finished prediction of a target drawn against its reference (``image/svg+xml``); blind
    predictions only after the release, as on the target page."""

    draw = staticmethod(prediction_drawing)

    def get(self, request, pk: int, prediction: int):
        target = get_object_or_404(Target.objects.prefetch_related("references"), pk=pk)
        found = get_object_or_404(
            target.predictions.public()
            .select_related("method_version__method")
            .filter(status=Prediction.Status.OK),
            pk=prediction,
        )
        blind = embargo_of(target)
        if blind and blind["hidden"]:
            raise Http404("blind predictions are shown after the release")
        return svg_response(self.draw(target, found))


class TargetPredictionStructureView(TargetPredictionDrawingView):
    """The same prediction as a 2-D drawing (NAVIEW layout), its pairs marked TP / FP and the reference
    pairs it missed (FN)."""

    draw = staticmethod(prediction_structure_drawing)


class TargetReferenceStructureView(View):
    """A target's reference (one pair definition) as a 2-D drawing (``image/svg+xml``)."""

    def get(self, request, pk: int, definition: str):
        target = get_object_or_404(Target, pk=pk)
        svg = reference_structure_drawing(target, definition)
        if svg is None:
            raise Http404("no reference under that definition")
        return svg_response(svg)


def svg_response(svg: str) -> HttpResponse:
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    response["Cache-Control"] = "public, max-age=3600"
    return response


def _has_pdb_chain(target: Target) -> bool:
    try:
        return target.pdb_chain is not None
    except Exception:  # noqa: BLE001 - RelatedObjectDoesNotExist when the target is not from the PDB poller
        return False
