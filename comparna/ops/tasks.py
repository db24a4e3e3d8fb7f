"""Periodic tasks of comparna.ops (queue ``default``)."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.utils import timezone


@shared_task(acks_late=True, time_limit=600, soft_time_limit=570, ignore_result=True)
def refresh_gauges_task() -> float:
    """Recompute the stored gauges of ``/metrics``; forget heartbeats of processes gone for a week."""
    from comparna.ops.gauges import refresh_gauges
    from comparna.ops.models import Heartbeat

    Heartbeat.objects.filter(seen_at__lt=timezone.now() - timedelta(days=7)).delete()
    return refresh_gauges().duration_s


@shared_task(acks_late=True, time_limit=120, soft_time_limit=100, ignore_result=True)
def start_pdb_set_task() -> str:
    """On start and then on schedule until the PDB set has begun: poll the RCSB now if it answers."""
    from comparna.ops.pdb_start import start_pdb_set

    return start_pdb_set()
