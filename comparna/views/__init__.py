"""HTML views: thin, they ask services (comparna.services.pages.<page>) and render templates."""

from __future__ import annotations

from comparna.views.comparison import (
    MethodComparisonCsvView,
    MethodComparisonPickView,
    MethodComparisonView,
)
from comparna.views.comparison_downloads import MethodComparisonZipView
from comparna.views.methods import MethodDetailView, MethodListView, MethodPredictionsView
from comparna.views.rankings import (
    DatasetRankingView,
    RankingDownloadView,
    RankingIndexView,
    RankingMatrixView,
    SubsetRankingView,
)
from comparna.views.site import AboutView, DatasetListView, HomeView, prediction_progress
from comparna.views.targets import (
    DatasetTargetListView,
    TargetBrowserView,
    TargetDetailView,
    TargetPredictionDrawingView,
    TargetPredictionStructureView,
    TargetReferenceStructureView,
)

__all__ = [
    "AboutView",
    "DatasetListView",
    "DatasetRankingView",
    "DatasetTargetListView",
    "HomeView",
    "MethodComparisonCsvView",
    "MethodComparisonZipView",
    "MethodComparisonPickView",
    "MethodComparisonView",
    "MethodDetailView",
    "MethodListView",
    "MethodPredictionsView",
    "RankingDownloadView",
    "RankingIndexView",
    "RankingMatrixView",
    "SubsetRankingView",
    "TargetBrowserView",
    "TargetDetailView",
    "TargetPredictionDrawingView",
    "TargetPredictionStructureView",
    "TargetReferenceStructureView",
    "prediction_progress",
]
