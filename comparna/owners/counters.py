"""Attempt counters in the database (issue 36): one count per key within a window, shared by every web
process, never evicted by other traffic (the local-memory cache counted per process, and ~3000 anonymous
requests evicted a lock). Used by the sign-in lockout and the sign-up rate limit.

Keys are hashes of what is counted (``kind`` and value): any user name or address makes a fixed-size key,
and the table holds no user name or address in clear.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from comparna.owners.models import AttemptCount


def attempt_key(kind: str, value: str) -> str:
    return f"{kind[:12]}:{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:40]}"


def count_attempt(*, key: str, window_s: float) -> int:
    """Count one attempt under ``key``; returns the count within the current window (which starts at the
    first attempt after the previous window expired). Atomic across processes: an update of the live row,
    else an insert, else (another process inserted it, or it expired) the locked row restarted or counted."""
    now = timezone.now()
    expires = now + timedelta(seconds=window_s)
    with transaction.atomic():
        if AttemptCount.objects.filter(key=key, expires_at__gt=now).update(count=F("count") + 1):
            return AttemptCount.objects.filter(key=key).values_list("count", flat=True).first() or 1
        try:
            with transaction.atomic():
                AttemptCount.objects.create(key=key, count=1, expires_at=expires)
            return 1
        except IntegrityError:
            row = AttemptCount.objects.select_for_update().get(key=key)
            if row.expires_at <= now:
                row.count, row.expires_at = 1, expires
            else:
                row.count += 1
            row.save(update_fields=["count", "expires_at"])
            return row.count


def current_counts(keys: list[str]) -> dict[str, int]:
    """The live counts of ``keys`` (an expired or missing key is absent)."""
    rows = AttemptCount.objects.filter(key__in=keys, expires_at__gt=timezone.now())
    return dict(rows.values_list("key", "count"))


def clear_attempts(*, key: str) -> None:
    AttemptCount.objects.filter(key=key).delete()


def purge_expired_attempts() -> int:
    """Delete the counters whose window has passed (periodic); returns how many."""
    return AttemptCount.objects.filter(expires_at__lte=timezone.now()).delete()[0]
