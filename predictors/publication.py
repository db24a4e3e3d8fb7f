"""Making an owner's development method public (staff, from the admin): it then enters public pages, the
rankings at their next computation and the next dataset snapshot; its owner is told in their digest.

A published method's owner cannot change what is ranked on their own (issue 26): a saved version that
changes what runs (program, kind, command, image, endpoint: a new fingerprint) is *proposed* — run on every
target and shown to its owner, but private — while the version staff approved stays the public, ranked
one. Staff approve it with the same "Make public" action, which then makes it current.

Approval is recorded on the version (:attr:`~predictors.models.MethodVersion.approved_at`, issue 36): only an
approved version's results are ever public (:func:`comparna.models.public_version_q`). A development method's
versions, a proposal awaiting review and one withdrawn or replaced before approval stay private (kept, shown
to their owner only, never deleted: their owner may compare them).

The training data a public method declares is part of what staff approve too: an owner's change of it alone
(same program, same fingerprint) is stored as the current version's ``proposed_training_data``; the approved
declaration stays in the spec, and the unseen ranking reads only that, until staff approve the change with
the same action.
"""

from __future__ import annotations

import dataclasses

from django.db import transaction
from django.utils import timezone

from comparna.owners.names import skeleton
from predictors.execution import spec_from_version
from predictors.models import Method, MethodVersion
from predictors.services import register_spec, spec_to_json


class NameTaken(Exception):
    """A development method cannot be made public: a public method has (or looks like) its name."""


def public_name_clash(method: Method) -> str | None:
    """The public method whose name ``method``'s is, or looks like (:func:`comparna.owners.names.conflicts`),
    or None. Development methods of different owners may share a name (issue 36: a refused name must not tell
    that a private method has it); the first made public keeps it, the other is renamed before publication."""
    key = skeleton(method.name)
    others = Method.objects.public().exclude(pk=method.pk).values_list("name", flat=True)
    return next((other for other in others.iterator() if skeleton(other) == key), None)


@transaction.atomic
def publish(*, method: Method) -> bool:
    """Make ``method`` public (approving its current version), or approve the version or the training data
    its owner proposed since it was; False when there was nothing to do. Raises :class:`NameTaken` when a
    public method already has (or looks like) a development method's name."""
    method = Method.objects.select_for_update().get(pk=method.pk)
    if method.is_public:
        approved = approve_pending_version(method=method) is not None
        return approve_training_data(method=method) or approved
    clash = public_name_clash(method)
    if clash is not None:
        raise NameTaken(
            f"{method.name!r} cannot be made public: the public method {clash!r} has or looks like that "
            "name; its owner must register it under another name"
        )
    method.visibility = Method.Visibility.PUBLIC
    method.published_at = timezone.now()
    method.save(update_fields=["visibility", "published_at"])
    approve_pending_version(method=method)  # a development method has none; harmless
    method.versions.filter(is_current=True, approved_at__isnull=True).update(approved_at=timezone.now())
    approve_training_data(method=method)
    return True


@transaction.atomic
def propose_version(*, method: Method, spec) -> MethodVersion:
    """Store ``spec`` as the version awaiting approval of the public ``method`` (not current: the approved
    version stays public and ranked); a spec with the current version's fingerprint changes only limits
    and texts, is registered as usual and withdraws any proposal.

    Only one version awaits approval at a time: a newer proposal replaces an older one (which stays in the
    history, never run again).
    """
    method = Method.objects.select_for_update().get(pk=method.pk)
    fingerprint = spec.fingerprint()
    current = method.current_version
    if current is not None and current.fingerprint == fingerprint:
        method.versions.filter(pending_review=True).update(pending_review=False)
        approved_training = tuple(current.spec.get("training_data") or ())
        proposed = tuple(spec.training_data) if spec.training_data != approved_training else None
        if proposed is not None:  # the approved declaration stays until staff approve the new one
            spec = dataclasses.replace(spec, training_data=approved_training)
        version = register_spec(spec=spec, from_catalogue=False, active=True, approved=False, method=method)
        version.proposed_training_data = list(proposed) if proposed is not None else None
        version.save(update_fields=["proposed_training_data"])
        return version
    method.versions.filter(pending_review=True).exclude(fingerprint=fingerprint).update(pending_review=False)
    version, created = MethodVersion.objects.get_or_create(
        method=method,
        fingerprint=fingerprint,
        defaults={
            "version": spec.version,
            "program": spec.program,
            "spec": spec_to_json(spec),
            "is_current": False,
            "pending_review": True,
            "approved_at": None,
        },
    )
    if not created:
        version.spec = spec_to_json(spec)
        version.pending_review = True
        version.runnable = True
        version.save(update_fields=["spec", "pending_review", "runnable"])
    return version


@transaction.atomic
def approve_pending_version(*, method: Method) -> MethodVersion | None:
    """Make the version awaiting approval the method's current one (its texts too); None when none waits."""
    pending = MethodVersion.objects.select_for_update().filter(method=method, pending_review=True).first()
    if pending is None:
        return None
    MethodVersion.objects.filter(pk=pending.pk).update(pending_review=False)
    return register_spec(spec=spec_from_version(pending), from_catalogue=False, method=method)


@transaction.atomic
def approve_training_data(*, method: Method) -> bool:
    """Make the training data its owner proposed for the current version the approved declaration (the
    unseen ranking uses it from its next computation); False when none was proposed."""
    current = MethodVersion.objects.select_for_update().filter(method=method, is_current=True).first()
    if current is None or current.proposed_training_data is None:
        return False
    current.spec = {**current.spec, "training_data": list(current.proposed_training_data)}
    current.proposed_training_data = None
    current.save(update_fields=["spec", "proposed_training_data"])
    return True
