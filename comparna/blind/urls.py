"""URLs of the blind track, included under ``/blind/`` by comparna/urls.py."""

from __future__ import annotations

import datetime as dt

from django.urls import path, register_converter

from comparna.blind import views


class DayConverter:
    """``YYYY-MM-DD`` as a date; anything else (or an impossible date) does not match (404)."""

    regex = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"

    def to_python(self, value: str) -> dt.date:
        return dt.date.fromisoformat(value)  # ValueError: no match

    def to_url(self, value) -> str:
        return value if isinstance(value, str) else value.isoformat()


register_converter(DayConverter, "day")

urlpatterns = [
    path("", views.BlindWeekListView.as_view(), name="blind-index"),
    path("awaiting/", views.BlindAwaitingView.as_view(), name="blind-awaiting"),
    path("<day:day>/", views.BlindWeekDetailView.as_view(), name="blind-week"),
    path("<day:day>/commitment.tsv", views.BlindCommitmentView.as_view(), name="blind-commitment"),
    path("<day:day>/predictions.json", views.BlindPredictionsView.as_view(), name="blind-predictions"),
]
