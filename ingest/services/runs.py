"""The state of a long data job on its run record (``comparna.models.RunRecord``): running, done or failed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.utils import timezone

from comparna.models import RunRecord

log = logging.getLogger(__name__)


@contextmanager
def recorded(
    run: RunRecord, *, what: str, expected: dict[type[Exception], str] | None = None
) -> Iterator[RunRecord]:
    """Drive ``run`` through its states around the job in the ``with`` block.

    The run ends ``done`` when the block completes. An exception of a type in ``expected`` (an outcome of the
    outside world, e.g. a search service failing) ends it ``failed`` with the mapped prefix and the message,
    and is not raised; any other exception is logged, recorded the same way, and raised. The finish time is
    saved in every case, so no run stays "running" after its job is gone.
    """
    try:
        yield run
        run.status = RunRecord.Status.DONE
    except tuple(expected or ()) as exc:
        prefix = next(text for kind, text in (expected or {}).items() if isinstance(exc, kind))
        run.status = RunRecord.Status.FAILED
        run.error = f"{prefix}: {exc}"
    except Exception as exc:
        log.exception("%s failed", what)
        run.status = RunRecord.Status.FAILED
        run.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        run.finished_at = timezone.now()
        run.save()
