"""Ingest pages: PDB polls with their per-entry outcomes, and downloads of stored comparative inputs."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.views import View
from django.views.generic import DetailView, ListView

from comparna.models import Target
from ingest.models import ComparativeInput, PollRun


class PollRunListView(ListView):
    """Every PDB poll with its progress and counts."""

    model = PollRun
    template_name = "ingest/polls.html"
    paginate_by = 50


class PollRunDetailView(DetailView):
    """One poll: progress, counts, and each entry's outcome (failures with their reason)."""

    model = PollRun
    template_name = "ingest/poll.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["entries"] = self.object.entries.prefetch_related("chains").order_by("status", "pdb_id")
        return ctx


class ComparativeInputDownloadView(View):
    """A stored (seed)/(20) input as FASTA or as its cmalign Stockholm alignment."""

    FORMATS = {"fasta": ("sequences", "text/x-fasta"), "sto": ("alignment", "text/plain")}

    def get(self, request, pk: int, kind: str, fmt: str):
        target = get_object_or_404(Target, pk=pk)
        if fmt not in self.FORMATS:
            raise Http404("format must be fasta or sto")
        comparative = target.comparative_inputs.filter(kind=kind).order_by("-created_at").first()
        if comparative is None:
            raise Http404(f"{target} has no ({kind}) input")
        field, content_type = self.FORMATS[fmt]
        response = HttpResponse(getattr(comparative, field), content_type=f"{content_type}; charset=utf-8")
        name = f"{target.source_id}_{kind}_{comparative.accession}.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


def comparative_inputs_of(target: Target) -> list[ComparativeInput]:
    return list(target.comparative_inputs.order_by("kind", "-created_at"))
