"""Public pages of the predictor layer: a method's prediction progress."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.views.generic import TemplateView

from predictors.models import Method, Prediction

#: Outcomes listed individually on the status page: the predictor did not give a usable structure.
FAILURE_STATES = (
    Prediction.Status.FAILED,
    Prediction.Status.TIMEOUT,
    Prediction.Status.UNPARSABLE,
    Prediction.Status.INFRASTRUCTURE_ERROR,
)
MAX_FAILURES_LISTED = 200


def status_counts(version, user=None) -> dict[str, int]:
    """Prediction counts of ``version`` per status, in the order of :class:`Prediction.Status` (those
    ``user`` may see: self-reported uploads only for the method's owner)."""
    rows = dict(
        Prediction.objects.visible_to(user)
        .filter(method_version=version)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return {s.value: rows.get(s.value, 0) for s in Prediction.Status}


class MethodStatusView(TemplateView):
    """``/methods/<name>/status/``: progress of the current version (counts per status, failures)."""

    template_name = "predictors/status.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        user = self.request.user
        method = get_object_or_404(Method.objects.visible_to(user), name=kwargs["name"])
        current = method.current_version
        counts = status_counts(current, user) if current else {}
        total = sum(counts.values())
        pending = counts.get("queued", 0) + counts.get("running", 0)
        failures = []
        older = method.versions.filter(is_current=False).order_by("-created_at")
        if not (user.is_authenticated and method.owner_id == user.pk):
            older = older.public()  # a version staff have not approved is its owner's business (issue 36)
        if current is not None:
            failures = list(
                Prediction.objects.visible_to(user).filter(method_version=current, status__in=FAILURE_STATES)
                .select_related("target", "target__dataset")
                .order_by("-finished_at", "pk")[:MAX_FAILURES_LISTED]
            )
        ctx.update(
            method=method,
            current=current,
            counts=[(Prediction.Status(s).label, s, n) for s, n in counts.items()],
            total=total,
            finished=total - pending,
            pending=pending,
            n_failures=sum(counts.get(s.value, 0) for s in FAILURE_STATES),
            failures=failures,
            max_failures=MAX_FAILURES_LISTED,
            older=[(v, sum(status_counts(v, user).values())) for v in older],
        )
        return ctx
