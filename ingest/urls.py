"""URLs of the ingest app; included at the site root by comparna/urls.py."""

from django.urls import path

from ingest import views

urlpatterns = [
    path("pdb/polls/", views.PollRunListView.as_view(), name="poll-list"),
    path("pdb/polls/<id:pk>/", views.PollRunDetailView.as_view(), name="poll-detail"),
    path(
        "targets/<id:pk>/inputs/<str:kind>.<str:fmt>",
        views.ComparativeInputDownloadView.as_view(),
        name="comparative-input",
    ),
]
