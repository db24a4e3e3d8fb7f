from django.apps import AppConfig


class ComparnaConfig(AppConfig):
    name = "comparna"
