from django.contrib import admin
from django.urls import path

from comparna.views import DatasetRankingView, HomeView

urlpatterns = [
    path("", HomeView.as_view(), name="home"),
    path("rankings/<slug:dataset>/", DatasetRankingView.as_view(), name="dataset-rankings"),
    path("admin/", admin.site.urls),
]
