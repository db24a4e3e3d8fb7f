"""Making an owner's development method public (staff, from the admin): it then enters public pages, the
rankings at their next computation and the next dataset snapshot; its owner is told in their digest."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from predictors.models import Method


@transaction.atomic
def publish(*, method: Method) -> bool:
    """Make ``method`` public; False when it already was."""
    method = Method.objects.select_for_update().get(pk=method.pk)
    if method.is_public:
        return False
    method.visibility = Method.Visibility.PUBLIC
    method.published_at = timezone.now()
    method.save(update_fields=["visibility", "published_at"])
    return True
