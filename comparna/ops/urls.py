from django.urls import path

from comparna.ops.views import HealthzView, MetricsView, ReadyzView

urlpatterns = [
    path("healthz", HealthzView.as_view(), name="healthz"),
    path("readyz", ReadyzView.as_view(), name="readyz"),
    path("metrics", MetricsView.as_view(), name="metrics"),
]
