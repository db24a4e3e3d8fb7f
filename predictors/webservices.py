"""Web-service methods in the pipeline: per-method throttling, job identity, callbacks and upload windows.

The runner (:mod:`predictors.core.webservice`) talks to one endpoint for one target; this module decides
*when* a prediction of a web-service method may start, across every worker process and host:

- **concurrency** — at most ``spec.max_concurrent`` predictions of the method are running;
- **rate** — at most ``spec.requests_per_minute`` started in the last 60 s.

Both are counted from the Prediction rows themselves (no counter that a dead worker could leave wrong), in
the transaction that claims the prediction, after a no-op UPDATE of the method's row: that row lock (a
write lock on SQLite) makes concurrent claims of one method take turns. A prediction that may not start yet
is sent again with a countdown — the owner's limits, not an infrastructure failure, so it costs no retry.

A job the service accepted (HTTP 202) waits for its upload until ``spec.upload_window_s`` has passed; the
periodic sweep :func:`close_expired_uploads` then records it as ``timeout``.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.db.models import F
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from comparna import pipeline
from predictors.core.spec import MAX_UPLOAD_WINDOW_S, PredictorSpec
from predictors.core.webservice import WebRequest, WebServiceRunner
from predictors.models import Method, Prediction

_CALLBACK_SALT = "predictors.webservices.callback"
#: Longest wait before a throttled prediction is tried again (when no slot's end can be foreseen).
MAX_DEFER_S = 30.0


def throttle_delay(prediction: Prediction, spec: PredictorSpec) -> float:
    """Seconds to wait before ``prediction`` may start (0: start now). Call inside the claiming transaction.

    Rows of other predictions of the same method are counted: running ones for the concurrency limit,
    those started in the last minute for the rate limit.
    """
    if spec.kind != "web" or not spec.endpoint:
        return 0.0
    method_id = prediction.method_version.method_id
    Method.objects.filter(pk=method_id).update(active=F("active"))  # serialise claims of this method
    now = timezone.now()
    same = Prediction.objects.filter(method_version__method_id=method_id).exclude(pk=prediction.pk)
    running = same.filter(status=Prediction.Status.RUNNING).count()
    if running >= spec.max_concurrent:
        return min(MAX_DEFER_S, max(1.0, spec.time_limit_s / 4)) + random.uniform(0, 1)
    window_start = now - timedelta(seconds=60)
    started = list(
        same.filter(started_at__gte=window_start).order_by("started_at").values_list("started_at", flat=True)
    )
    if len(started) >= spec.requests_per_minute:
        # the oldest start in the window leaves it first
        free_at = started[len(started) - spec.requests_per_minute] + timedelta(seconds=60)
        return max(0.5, (free_at - now).total_seconds()) + random.uniform(0, 0.5)
    return 0.0


def defer(prediction: Prediction, delay_s: float) -> None:
    """Send the prediction again after ``delay_s`` (it stays queued)."""
    pipeline.prediction_deferred(prediction_id=prediction.pk, countdown=delay_s)


def callback_token(prediction_id: int) -> str:
    """A token that authorises the upload of this prediction's structure only (sent with the job)."""
    return signing.dumps({"p": prediction_id}, salt=_CALLBACK_SALT, compress=True)


def prediction_of_callback(token: str) -> int | None:
    """The prediction a callback token was issued for, or None if the token is forged or too old."""
    try:
        data = signing.loads(token, salt=_CALLBACK_SALT, max_age=MAX_UPLOAD_WINDOW_S + 86400)
    except signing.BadSignature:
        return None
    value = data.get("p") if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def callback_url(prediction_id: int) -> str | None:
    """Absolute URL of the upload callback (``settings.SITE_URL`` + the owners API route), if routed."""
    try:
        path = reverse("owner-api-callback")
    except NoReverseMatch:
        return None
    return settings.SITE_URL.rstrip("/") + path


def runner_for(prediction: Prediction, spec: PredictorSpec) -> WebServiceRunner:
    """The runner of one prediction: its id, the target's id and the callback go with the request."""
    return WebServiceRunner(
        request=WebRequest(
            id=str(prediction.pk),
            target=prediction.target.source_id,
            callback_url=callback_url(prediction.pk),
            callback_token=callback_token(prediction.pk),
        ),
        backoff_s=settings.WEBSERVICE_BACKOFF_S,
    )


def awaiting_until(spec: PredictorSpec):
    return timezone.now() + timedelta(seconds=float(spec.upload_window_s))


def close_expired_uploads() -> int:
    """Record every awaiting prediction whose upload window closed as ``timeout``; returns how many."""
    now = timezone.now()
    with transaction.atomic():
        return Prediction.objects.filter(status=Prediction.Status.AWAITING, awaiting_until__lt=now).update(
            status=Prediction.Status.TIMEOUT,
            finished_at=now,
            error="no upload arrived within the upload window after the service accepted the job",
        )
