"""HTML views: thin, they ask services and render templates."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.views.generic import TemplateView

from comparna.models import Dataset, ImportRun
from comparna.services.rankings import latest_snapshots
from comparna.services.summaries import summarize_dataset
from predictors.models import Method, Prediction


class HomeView(TemplateView):
    """What CompaRNA is and where the benchmark stands."""

    template_name = "comparna/home.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["datasets"] = Dataset.objects.annotate(n_targets=Count("targets")).order_by("slug")
        ctx["methods"] = Method.objects.filter(active=True)
        ctx["progress"] = prediction_progress()
        ctx["imports"] = ImportRun.objects.all()[:5]
        return ctx


class DatasetRankingView(TemplateView):
    """Pooled scores of every method on each subset of one dataset."""

    template_name = "comparna/rankings.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        dataset = get_object_or_404(Dataset, slug=kwargs["dataset"])
        ctx["dataset"] = dataset
        snapshots = {(s.subset_id, s.definition): s for s in latest_snapshots(dataset=dataset)}
        ctx["sections"] = [
            {"summary": summary, "snapshot": snapshots.get((summary.subset.pk, summary.definition))}
            for summary in summarize_dataset(dataset=dataset)
        ]
        ctx["progress"] = prediction_progress()
        return ctx


def prediction_progress() -> dict:
    counts = dict(Prediction.objects.values_list("status").annotate(n=Count("id")).order_by())
    total = sum(counts.values())
    pending = counts.get(Prediction.Status.QUEUED, 0) + counts.get(Prediction.Status.RUNNING, 0)
    return {"total": total, "pending": pending, "finished": total - pending, "by_status": counts}
