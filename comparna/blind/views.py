"""Blind-track pages and downloads (``/blind/...``)."""

from __future__ import annotations

import json

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.views import View
from django.views.generic import TemplateView

from comparna import clock
from comparna.blind.freezing import published_contents
from comparna.blind.models import BlindWeek
from comparna.blind.pages import DEFINITIONS, awaiting_context, index_context, week_context


def _definition(request) -> str:
    value = request.GET.get("definition", "standard")
    return value if value in DEFINITIONS else "standard"


class BlindWeekListView(TemplateView):
    """``/blind/``: the weekly timeline, every week, the cumulative ranking and its sequential verdicts."""

    template_name = "blind/index.html"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **index_context(_definition(self.request))}


class BlindWeekDetailView(TemplateView):
    """``/blind/<release date>/``: targets, who predicted what, commitment, verification, ranking."""

    template_name = "blind/week.html"

    def get_context_data(self, **kwargs):
        week = get_object_or_404(BlindWeek, release_date=kwargs["day"])
        return {**super().get_context_data(**kwargs), **week_context(week, _definition(self.request))}


class BlindAwaitingView(TemplateView):
    """``/blind/awaiting/``: targets predicted blind whose structure is not released yet."""

    template_name = "blind/awaiting.html"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **awaiting_context()}


class BlindCommitmentView(View):
    """The week's commitment file, exactly as hashed (``text/tab-separated-values``)."""

    def get(self, request, day):
        week = get_object_or_404(BlindWeek, release_date=day)
        if not week.committed:
            raise Http404("this week has no commitment yet (it is written at the deadline)")
        response = HttpResponse(week.commitment.encode("utf-8"), content_type="text/tab-separated-values")
        response["Content-Disposition"] = f'attachment; filename="comparna-blind-{day}-commitment.tsv"'
        response["X-Content-SHA256"] = week.commitment_sha256
        return response


class BlindPredictionsView(View):
    """Every frozen prediction of a week with the content that was hashed (nonce included): after the
    release only, so the hashes can be recomputed by anyone."""

    def get(self, request, day):
        week = get_object_or_404(BlindWeek, release_date=day)
        if week.release_at > clock.now():
            raise Http404("blind predictions are published after the release")
        body = {
            "week": str(week.release_date),
            "commitment_sha256": week.commitment_sha256,
            "hash": "sha256 of the canonical JSON of 'content' (sorted keys, separators ',' ':', ASCII)",
            "predictions": published_contents(week),
        }
        response = HttpResponse(json.dumps(body, indent=1), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="comparna-blind-{day}-predictions.json"'
        return response
