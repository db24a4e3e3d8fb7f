from django.contrib import admin
from django.http import HttpResponse
from django.urls import include, path
from django.views.decorators.cache import cache_control

from comparna import views
from comparna.views.families import FamilyBreakdownView, UnseenRankingView
from comparna.views.weeks import WeekDetailView, WeekListView

RANKING = "rankings/<slug:dataset>/<slug:subset>/<slug:definition>/"

urlpatterns = [
    path("", views.HomeView.as_view(), name="home"),
    path("about/", views.AboutView.as_view(), name="about"),
    path("datasets/", views.DatasetListView.as_view(), name="datasets"),
    path("datasets/<slug:dataset>/targets/", views.DatasetTargetListView.as_view(), name="dataset-targets"),
    path("targets/", views.TargetBrowserView.as_view(), name="targets"),
    path("targets/<id:pk>/", views.TargetDetailView.as_view(), name="target-detail"),
    path(
        "targets/<id:pk>/predictions/<id:prediction>.svg",
        views.TargetPredictionDrawingView.as_view(),
        name="target-prediction-drawing",
    ),
    path(
        "targets/<id:pk>/predictions/<id:prediction>/structure.svg",
        views.TargetPredictionStructureView.as_view(),
        name="target-prediction-structure",
    ),
    path(
        "targets/<id:pk>/reference/<slug:definition>/structure.svg",
        views.TargetReferenceStructureView.as_view(),
        name="target-reference-structure",
    ),
    path("methods/", views.MethodListView.as_view(), name="methods"),
    path("methods/<id:pk>/", views.MethodDetailView.as_view(), name="method-detail"),
    path("methods/<id:pk>/predictions/", views.MethodPredictionsView.as_view(), name="method-predictions"),
    path("families/<slug:dataset>/", FamilyBreakdownView.as_view(), name="dataset-families"),
    path("families/<slug:dataset>/<slug:definition>/", FamilyBreakdownView.as_view(), name="families"),
    path("unseen/<slug:dataset>/", UnseenRankingView.as_view(), name="dataset-unseen"),
    path("unseen/<slug:dataset>/<slug:definition>/", UnseenRankingView.as_view(), name="unseen"),
    path("rankings/", views.RankingIndexView.as_view(), name="rankings-index"),
    path("rankings/<slug:dataset>/", views.DatasetRankingView.as_view(), name="dataset-rankings"),
    path(RANKING, views.SubsetRankingView.as_view(), name="subset-rankings"),
    path(RANKING + "matrix/", views.RankingMatrixView.as_view(), name="ranking-matrix"),
    path(RANKING + "ranking.<slug:fmt>", views.RankingDownloadView.as_view(), name="ranking-download"),
    path(RANKING + "compare/", views.MethodComparisonPickView.as_view(), name="method-comparison-pick"),
    path(
        RANKING + "compare/<id:a>/<id:b>/", views.MethodComparisonView.as_view(), name="method-comparison"
    ),
    path(
        RANKING + "compare/<id:a>/<id:b>/data.csv",
        views.MethodComparisonCsvView.as_view(),
        name="method-comparison-csv",
    ),
    path(
        RANKING + "compare/<id:a>/<id:b>/pair.zip",
        views.MethodComparisonZipView.as_view(),
        name="method-comparison-zip",
    ),
    path("", include("comparna.advice.urls")),
    path("api/blind/", include("comparna.blind.api_urls")),
    path("api/", include("comparna.api.urls")),
    path("snapshots/", include("comparna.snapshots.urls")),
    path("blind/", include("comparna.blind.urls")),
    path("", include("predictors.urls")),
    path("", include("comparna.owners.urls")),
    path("", include("ingest.urls")),
    path("", include("comparna.ops.urls")),
    path("admin/", admin.site.urls),
    # Browsers ask for it on pages without an icon link (the admin's): no icon, but no 404 either.
    path("favicon.ico", cache_control(max_age=86400)(lambda request: HttpResponse(status=204))),
    path("weeks/<slug:dataset>/", WeekListView.as_view(), name="pdb-weeks"),
    path("weeks/<slug:dataset>/<day:day>/", WeekDetailView.as_view(), name="pdb-week"),
]
