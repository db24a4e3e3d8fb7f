"""The weekly PDB set week by week: the release days, and one week's targets with every method's score."""

from __future__ import annotations

import datetime as dt

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.views.generic import TemplateView

from comparna.models import Dataset
from comparna.services.pages.weeks import release_weeks, week_table


class WeekListView(TemplateView):
    """The release days of a weekly (PDB) dataset, newest first, with their number of targets."""

    template_name = "comparna/weeks.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        dataset = get_object_or_404(Dataset, slug=kwargs["dataset"], kind=Dataset.Kind.PDB)
        ctx.update(dataset=dataset, weeks=release_weeks(dataset=dataset))
        return ctx


class WeekDetailView(TemplateView):
    """One release day: its targets and every public method's MCC on each (``?definition=standard``)."""

    template_name = "comparna/week.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        dataset = get_object_or_404(Dataset, slug=kwargs["dataset"], kind=Dataset.Kind.PDB)
        day: dt.date = kwargs["day"]
        definitions = list(dataset.definitions)
        definition = self.request.GET.get("definition") or ("extended" if "extended" in definitions else "")
        if definition not in definitions:
            raise Http404("unknown pair definition")
        table = week_table(dataset=dataset, day=day, definition=definition)
        if not table["targets"]:
            raise Http404("no target was released that day")
        days = [w["release_date"] for w in release_weeks(dataset=dataset, limit=10**6)]
        k = days.index(day)
        ctx.update(
            dataset=dataset,
            definitions=definitions,
            newer=days[k - 1] if k > 0 else None,
            older=days[k + 1] if k + 1 < len(days) else None,
            **table,
        )
        return ctx
