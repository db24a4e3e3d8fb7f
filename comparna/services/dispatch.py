"""Sending Celery tasks after a transaction commits, without letting a broker failure undo stored work."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction

log = logging.getLogger(__name__)


def send_after_commit(task, calls: Iterable[tuple]) -> None:
    """After the surrounding transaction commits, send ``task.delay(*args)`` for each args tuple.

    The rows these tasks work on are already stored when the broker is asked; if it cannot be reached,
    the failure is logged and the periodic sweeps (stuck/lost predictions, missing family assignments)
    send the work again later, so the caller's data is never reported as failed because of the broker.
    """
    calls = list(calls)

    def send() -> None:
        for n, args in enumerate(calls):
            try:
                task.delay(*args)
            except Exception:  # noqa: BLE001 - any broker error: the sweeps recover, stored rows stay
                log.exception("could not send %s (%d of %d not sent); the periodic sweep will resend",
                              task.name, len(calls) - n, len(calls))
                return

    transaction.on_commit(send)
