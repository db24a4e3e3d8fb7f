"""API URLs of the blind track, included under ``/api/blind/`` by comparna/urls.py."""

from django.urls import path

from comparna.blind import api

urlpatterns = [
    path("weeks/", api.BlindWeeksView.as_view(), name="blind-api-weeks"),
    path("predictions/", api.BlindSubmissionView.as_view(), name="blind-api-submit"),
]
