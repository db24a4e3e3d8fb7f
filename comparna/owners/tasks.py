"""Celery tasks of method owners (queue ``default``)."""

from __future__ import annotations

from celery import shared_task

from comparna.owners.accounts import expire_unconfirmed_accounts
from comparna.owners.counters import purge_expired_attempts
from comparna.owners.notifications import collect_notices, send_digests


@shared_task(acks_late=True, queue="default", soft_time_limit=540, time_limit=600)
def send_owner_digests_task() -> dict:
    """Periodic: record new events of owners' methods and mail each owner one digest (idempotent)."""
    return {"notices": collect_notices(), "digests": send_digests()}


@shared_task(acks_late=True, queue="default", soft_time_limit=240, time_limit=300)
def expire_accounts_task() -> dict:
    """Periodic: delete accounts whose address was never confirmed in time, and attempt counters whose
    window has passed (idempotent)."""
    return {"accounts": expire_unconfirmed_accounts(), "counters": purge_expired_attempts()}
