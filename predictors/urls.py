"""URLs of the predictor layer; included at the site root by comparna/urls.py."""

from django.urls import path

from predictors import views

urlpatterns = [
    path("methods/<str:name>/status/", views.MethodStatusView.as_view(), name="method-status"),
]
