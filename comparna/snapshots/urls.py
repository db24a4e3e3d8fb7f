"""Snapshot URLs; included by the project under ``snapshots/`` (namespace ``snapshots``)."""

from django.urls import path

from comparna.snapshots.views import (
    SnapshotDetailView,
    SnapshotDownloadView,
    SnapshotIndexView,
    SnapshotListView,
    SnapshotPairDownloadView,
    SnapshotPairPickView,
)

app_name = "snapshots"

urlpatterns = [
    path("", SnapshotIndexView.as_view(), name="index"),
    path("<slug:dataset>/", SnapshotListView.as_view(), name="list"),
    path("<slug:dataset>/<id:number>/", SnapshotDetailView.as_view(), name="detail"),
    path("<slug:dataset>/<id:number>/download", SnapshotDownloadView.as_view(), name="download"),
    path("<slug:dataset>/compare/", SnapshotPairPickView.as_view(), name="pair-pick"),
    path(
        "<slug:dataset>/compare/<str:method_a>/<str:method_b>.csv",
        SnapshotPairDownloadView.as_view(),
        name="pair-download",
    ),
]
