"""CompaRNA: continuous benchmarking of RNA secondary-structure prediction methods."""

from .celery import app as celery_app

__all__ = ("celery_app",)
