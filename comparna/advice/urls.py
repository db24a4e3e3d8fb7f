from __future__ import annotations

from django.urls import path

from comparna.advice import api, views

TOKEN = "advice/<str:token>/"

urlpatterns = [
    path("advice/", views.AdviceFormView.as_view(), name="advice"),
    path(TOKEN, views.AdviceResultView.as_view(), name="advice-result"),
    path(TOKEN + "<id:position>/<id:run>.svg", views.AdviceDrawingView.as_view(), name="advice-drawing"),
    path(TOKEN + "<id:position>/<id:run>.<slug:fmt>", views.AdviceDownloadView.as_view(),
         name="advice-download"),
    path("api/advice/", api.AdviceCreateApi.as_view(), name="api-advice"),
    path("api/advice/<str:token>/", api.AdviceDetailApi.as_view(), name="api-advice-detail"),
]
