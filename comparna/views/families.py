"""The per-family breakdown of a dataset and its leakage-aware ("unseen") ranking."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.views.generic import TemplateView

from comparna.models import Dataset
from comparna.services.leakage import IDENTITY
from comparna.services.pages.families import family_breakdown, family_ranking, unseen_comparison


def _dataset_definition(kwargs) -> tuple[Dataset, str]:
    dataset = get_object_or_404(Dataset, slug=kwargs["dataset"])
    definition = kwargs.get("definition") or (dataset.definitions[0] if dataset.definitions else "")
    if definition not in dataset.definitions:
        raise Http404("no such pair definition for this dataset")
    return dataset, definition


class FamilyBreakdownView(TemplateView):
    """Each method's mean MCC with its CI per RNA family (heat map and table)."""

    template_name = "comparna/families.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        dataset, definition = _dataset_definition(kwargs)
        data = family_breakdown(dataset, definition)
        family = self.request.GET.get("family")
        selected = family_ranking(data, family) if family is not None else None
        if family is not None and selected is None:
            raise Http404("no such family in this dataset")
        ctx.update(dataset=dataset, definition=definition, data=data, selected=selected,
                   datasets=Dataset.objects.exclude(pk=dataset.pk).order_by("slug"))
        return ctx


class UnseenRankingView(TemplateView):
    """Full vs leakage-aware rank of every method of a dataset."""

    template_name = "comparna/unseen.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        dataset, definition = _dataset_definition(kwargs)
        ctx.update(dataset=dataset, definition=definition, data=unseen_comparison(dataset, definition),
                   datasets=Dataset.objects.order_by("slug"), identity_pct=round(100 * IDENTITY))
        return ctx
