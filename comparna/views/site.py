"""Home, datasets and the page that explains the numbers."""

from __future__ import annotations

from django.views.generic import TemplateView

from comparna.models import ImportRun
from comparna.ops.pdb_start import pdb_start_status
from comparna.rna import ranking, statistics, thresholds
from comparna.services import progress
from comparna.services.pages.common import LENGTH_BINS, cached
from comparna.services.pages.dataset_groups import dataset_group, grouped
from comparna.services.pages.provenance import with_provenance
from comparna.services.pages.rankings import rankings_at_a_glance
from comparna.services.pages.site import (
    dataset_downloads,
    dataset_overview,
    datasets_with_sizes,
    import_outcome,
    weekly_changes,
)
from comparna.services.tallies import comparative_input_targets
from ingest.models import PollRun
from predictors.models import Method


def prediction_progress() -> dict:
    """Predictions by state with the measured throughput and ETA (:mod:`comparna.services.progress`), cached
    for 30 s: every page shows it, and it changes continuously."""
    return cached("progress", progress.prediction_progress, timeout=30)


class HomeView(TemplateView):
    """What CompaRNA is, what changed this week and the latest rankings at a glance."""

    template_name = "comparna/home.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        # bounded by the number of datasets, never by the catalogue's size
        ctx["datasets"] = [
            {"dataset": d, "downloads": (lambda links: links[:1] + links[-1:] if links else [])(
                dataset_downloads(d)), **dataset_group(d)}
            for d in grouped(datasets_with_sizes()[0])
        ]
        active = Method.objects.public().filter(active=True)
        ctx["n_methods"] = active.count()
        # comparative methods run on a target once its homologue inputs exist (issue 37): not "every target"
        ctx["n_comparative"] = active.exclude(input_kind=Method.InputKind.SINGLE).count()
        ctx["n_single"] = ctx["n_methods"] - ctx["n_comparative"]
        ctx["comparative_ready"], ctx["comparative_of"] = comparative_input_targets()
        ctx["progress"] = prediction_progress()
        ctx["imports"] = [{"run": r, "outcome": import_outcome(r)} for r in ImportRun.objects.all()[:5]]
        ctx["changes"] = weekly_changes()
        ctx["glance"] = sorted(rankings_at_a_glance(), key=lambda g: bool(dataset_group(g["dataset"])))
        for g in ctx["glance"]:  # one query per dataset shown (issue 36)
            with_provenance(g["rows"], dataset=g["dataset"])
        ctx["polls"] = list(PollRun.objects.all()[:3])
        ctx["pdb_start"] = pdb_start_status()
        return ctx


class DatasetListView(TemplateView):
    """Datasets, their subsets and sizes, with download links where archived snapshots exist."""

    template_name = "comparna/datasets.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["datasets"] = dataset_overview()
        return ctx


class AboutView(TemplateView):
    """The metrics, the test and the thresholds behind every number on the site."""

    template_name = "comparna/about.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx["conventions"] = ranking.target_conventions()  # the primary, target-level verdict
        ctx["conventions_2013"] = ranking.engine_conventions()  # the CompaRNA 2013 protocol (a labelled view)
        ctx["thresholds"] = thresholds
        ctx["window_minutes"] = progress.WINDOW_MINUTES
        ctx["min_measuring_minutes"] = progress.MIN_MEASURING_MINUTES
        ctx["resamples"] = statistics.RESAMPLES
        ctx["confidence"] = int(statistics.CONFIDENCE * 100)
        ctx["length_bins"] = [label for _, _, label in LENGTH_BINS]
        return ctx
