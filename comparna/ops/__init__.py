"""Operations: health and readiness, Prometheus metrics, worker and beat heartbeats, JSON logs, backups.

Everything an operator needs to keep a deployment running for years (docs/operations.md). The app reads the
other apps' tables but no other app imports it: workers and beat load its heartbeat hooks by name
(comparna/celery.py, ``CELERY_BEAT_SCHEDULER``), so ingest and predictors stay independent of it.
"""
