"""CompaRNA: continuous benchmarking of RNA secondary-structure prediction methods.

Deliberately empty: importing ``comparna.rna`` (the pure core, also loaded by every sandboxed predictor
program) must not load Celery or Django. The Celery application lives in :mod:`comparna.celery`; workers
and beat start it with ``celery -A comparna.celery:app``, and Django processes (web, management commands)
load it in :meth:`comparna.apps.ComparnaConfig.ready` so that the tasks they send use its configuration.
"""
