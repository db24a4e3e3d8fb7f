from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import APIRootView, DefaultRouter

from comparna.api import views


class CompaRNARootView(APIRootView):
    """CompaRNA's API: datasets, targets, methods, predictions, scores and ranking snapshots, read-only. The
    schema is at /api/schema/ and its documentation at /api/docs/."""

    def get_view_name(self) -> str:
        return "CompaRNA API"


class CompaRNARouter(DefaultRouter):
    """The router whose root page describes the API (DRF's own root view describes itself as
    "The default basic root view for DefaultRouter")."""

    APIRootView = CompaRNARootView


router = CompaRNARouter()
router.register("datasets", views.DatasetViewSet, basename="api-dataset")
router.register("targets", views.TargetViewSet, basename="api-target")
router.register("methods", views.MethodViewSet, basename="api-method")
router.register("predictions", views.PredictionViewSet, basename="api-prediction")
router.register("scores", views.ScoreViewSet, basename="api-score")
router.register("rankings", views.RankingViewSet, basename="api-ranking")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its script as a file of its own: no inline script (Content-Security-Policy).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include(router.urls)),
]
