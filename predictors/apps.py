from django.apps import AppConfig


class PredictorsConfig(AppConfig):
    name = "predictors"
