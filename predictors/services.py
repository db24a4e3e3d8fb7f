"""Predictor services: catalogue sync, queueing, and the sweep (execution: :mod:`predictors.execution`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from comparna import pipeline
from comparna.models import Target
from predictors.execution import (  # noqa: F401 - execution names re-exported for existing callers
    InfrastructureError,
    execute_prediction,
    json_ready,
    spec_from_version,
    store_result,
    worker_known_dead,
)
from predictors.models import Method, MethodVersion, Prediction

log = logging.getLogger(__name__)

# Outcomes that end a prediction; everything else is still queued/running.
FINAL_STATES = {
    Prediction.Status.OK,
    Prediction.Status.FAILED,
    Prediction.Status.TIMEOUT,
    Prediction.Status.TOO_LONG,
    Prediction.Status.UNPARSABLE,
}


def spec_to_json(spec) -> dict:
    return json_ready(spec.as_dict())


@transaction.atomic
def register_spec(*, spec, from_catalogue: bool = True, active: bool | None = None) -> MethodVersion:
    """Create or update the method of ``spec``; a changed fingerprint makes a new current version."""
    method, _ = Method.objects.get_or_create(name=spec.name)
    method.description = spec.description
    method.citation = spec.citation
    method.url = spec.url
    method.input_kind = spec.input_kind
    method.pseudoknots = spec.pseudoknots
    method.from_catalogue = from_catalogue
    if active is not None:
        method.active = active
    method.save()
    fingerprint = spec.fingerprint()
    version = method.versions.filter(fingerprint=fingerprint).first()
    if version is None or not version.is_current:
        method.versions.filter(is_current=True).update(is_current=False)
        if version is None:
            version = MethodVersion.objects.create(
                method=method,
                version=spec.version,
                program=spec.program,
                spec=spec_to_json(spec),
                fingerprint=fingerprint,
                is_current=True,
            )
        else:
            version.is_current = True
            version.save(update_fields=["is_current"])
    if version.spec != spec_to_json(spec) or not version.runnable:
        # Same fingerprint, other limits or texts: the runner reads the spec from this row, so a changed
        # time/memory/length limit must reach it (predictions stay comparable: the method is unchanged).
        # Registering (catalogue sync, or the admin after a successful test run) is what makes a version
        # imported from a snapshot runnable.
        version.spec = spec_to_json(spec)
        version.runnable = True
        version.save(update_fields=["spec", "runnable"])
    return version


def sync_predictors(
    *, specs: Iterable | None = None, only: Iterable[str] | None = None
) -> list[MethodVersion]:
    """Sync the declared catalogue to the database; catalogue methods no longer declared are deactivated.

    ``only`` keeps just the named catalogue entries active (a deployment that runs a subset).
    """
    from predictors.catalogue import load_catalogue  # probes the installed programs when first imported

    specs = list(load_catalogue() if specs is None else specs)
    if only is not None:
        only = set(only)
        unknown = only - {s.name for s in specs}
        if unknown:
            raise ValueError(f"not in the catalogue: {', '.join(sorted(unknown))}")
        specs = [s for s in specs if s.name in only]
    versions = [register_spec(spec=spec, from_catalogue=True, active=True) for spec in specs]
    names = {s.name for s in specs}
    Method.objects.filter(from_catalogue=True).exclude(name__in=names).update(active=False)
    return versions


def queue_predictions(
    *, versions: Iterable[MethodVersion] | None = None, targets: Iterable[Target] | None = None
) -> int:
    """Create queued predictions for each (current version, target) pair not yet run, and enqueue them.

    Unique constraints make this idempotent; tasks are sent only after the transaction commits.
    """
    if versions is None:
        versions = MethodVersion.objects.filter(is_current=True, method__active=True)
    # Versions imported from a snapshot are never run (their spec came from an archive, not a registration).
    versions = [v for v in versions if v.runnable]
    target_ids = list(
        (Target.objects.all() if targets is None else Target.objects.filter(pk__in=[t.pk for t in targets]))
        .values_list("pk", flat=True)
    )
    created = 0
    with transaction.atomic():
        for version in versions:
            kind = version.spec.get("comparative_input")
            eligible = target_ids
            if kind:
                # Comparative methods run only where the target has that homologue input (SCIENCE.md §4).
                eligible = set(
                    Target.objects.filter(pk__in=target_ids, comparative_inputs__kind=kind).values_list(
                        "pk", flat=True
                    )
                )
            existing = set(
                Prediction.objects.filter(method_version=version, target_id__in=target_ids).values_list(
                    "target_id", flat=True
                )
            )
            rows = [
                Prediction(method_version=version, target_id=t)
                for t in target_ids
                if t in eligible and t not in existing
            ]
            Prediction.objects.bulk_create(rows, batch_size=500, ignore_conflicts=True)
            created += len(rows)
        queued = list(
            Prediction.objects.filter(
                status=Prediction.Status.QUEUED, method_version__in=versions, target_id__in=target_ids
            )
            .order_by("target__length", "pk")
            .values_list("pk", flat=True)
        )
        pipeline.predictions_queued(prediction_ids=queued)
    return created


def queue_predictions_on(*, target_ids: list[int], comparative_only: bool = False) -> int:
    """Queue every current method of active methods (or only the comparative ones) on these targets."""
    versions = MethodVersion.objects.filter(is_current=True, method__active=True)
    if comparative_only:
        versions = versions.exclude(method__input_kind=Method.InputKind.SINGLE)
    return queue_predictions(versions=versions, targets=Target.objects.filter(pk__in=target_ids))


def queue_unpredicted_targets(*, limit: int = 2000) -> int:
    """Queue every current method on targets that have no prediction at all (their pipeline message was lost).

    Returns how many predictions were created.
    """
    unpredicted = Target.objects.filter(predictions__isnull=True).order_by("pk")
    ids = list(unpredicted.values_list("pk", flat=True)[:limit])
    return queue_predictions_on(target_ids=ids) if ids else 0


def requeue_stuck_predictions(*, grace_s: float = 300, lost_after_s: float | None = None) -> dict[str, int]:
    """Re-queue predictions whose worker died or whose message was lost.

    A running prediction is stuck when its worker is known dead (same host) or, when that cannot be
    told (another host or container), when it has been running past its time limit + ``grace_s``.

    Queued predictions older than ``lost_after_s`` are sent again (e.g. the broker lost its queue on a
    restart). Duplicated messages are harmless: only a ``queued`` prediction is ever run.
    """
    now = timezone.now()
    lost_after_s = settings.PREDICTION_RESEND_AFTER_S if lost_after_s is None else lost_after_s
    stuck = []
    running = Prediction.objects.filter(status=Prediction.Status.RUNNING).select_related("method_version")
    for p in running:
        limit = float(p.method_version.spec.get("time_limit_s", 3600))
        if worker_known_dead(p.worker):
            stuck.append(p.pk)  # its worker is gone: no need to wait for the limit
        elif p.started_at is None or p.started_at < now - timedelta(seconds=limit + grace_s):
            stuck.append(p.pk)
    with transaction.atomic():
        n_stuck = Prediction.objects.filter(pk__in=stuck, status=Prediction.Status.RUNNING).update(
            status=Prediction.Status.QUEUED, queued_at=now, error="re-queued: worker lost while running",
            worker="",
        )
        lost = list(
            Prediction.objects.filter(
                status=Prediction.Status.QUEUED,
                queued_at__lt=now - timedelta(seconds=lost_after_s),
                method_version__runnable=True,
            ).values_list("pk", flat=True)
        )
        Prediction.objects.filter(pk__in=lost).update(queued_at=now)
        resend = sorted(set(stuck) | set(lost))
        pipeline.predictions_queued(prediction_ids=resend)
    return {"stuck": n_stuck, "resent": len(resend)}
