"""Targets of a dataset and one target's page."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.views.generic import ListView, TemplateView

from comparna.blind.embargo import embargo_of
from comparna.models import Dataset, Target
from comparna.services.pages.targets import target_context


class DatasetTargetListView(ListView):
    """The targets of a dataset, paginated, with a search by id."""

    template_name = "comparna/targets.html"
    paginate_by = 100
    context_object_name = "targets"

    def get_queryset(self):
        self.dataset = get_object_or_404(Dataset, slug=self.kwargs["dataset"])
        qs = Target.objects.filter(dataset=self.dataset).order_by("source_id")
        q = self.request.GET.get("q", "").strip()
        if q:
            qs = qs.filter(source_id__icontains=q)
        return qs

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["dataset"] = self.dataset
        ctx["q"] = self.request.GET.get("q", "")
        return ctx


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


def _has_pdb_chain(target: Target) -> bool:
    try:
        return target.pdb_chain is not None
    except Exception:  # noqa: BLE001 - RelatedObjectDoesNotExist when the target is not from the PDB poller
        return False
