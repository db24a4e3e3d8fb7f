"""Owner accounts: sign-up, e-mail confirmation and staff approval, with the e-mails they send.

Sign-up stores an inactive user (so an unconfirmed address can do nothing) and mails a signed, expiring
confirmation link; following it activates the account and tells the staff that an owner awaits approval;
staff approval (admin action) lets the owner register methods and is mailed to them.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from comparna.owners.models import Notice, OwnerProfile

log = logging.getLogger(__name__)
_CONFIRM_SALT = "comparna.owners.confirm"


class ConfirmationInvalid(ValueError):
    """A confirmation link that is forged, expired or for an address that changed."""


def absolute(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def confirmation_token(user) -> str:
    return signing.dumps({"u": user.pk, "e": user.email}, salt=_CONFIRM_SALT, compress=True)


def _mail(to: list[str], subject: str, body: str) -> None:
    """Send one e-mail; a mail server that is down is logged, never a failed request or task."""
    if not to:
        return
    try:
        send_mail(f"[CompaRNA] {subject}", body, settings.DEFAULT_FROM_EMAIL, to)
    except Exception:  # noqa: BLE001 - SMTP errors of any kind: the action itself succeeded
        log.exception("could not send e-mail %r to %s", subject, to)


@transaction.atomic
def sign_up(*, username: str, email: str, password: str, affiliation: str = ""):
    """Store a new, inactive owner account and mail its confirmation link; returns it.

    An address that has an account already (compared case-insensitively) gets no second one: its owner is
    told by e-mail and the caller answers exactly as for a new account (issue 26: the sign-up page says
    nothing about which addresses have accounts). Returns None then.
    """
    existing = get_user_model().objects.filter(email__iexact=email).first()
    if existing is not None:
        body = (
            "Hello,\n\nsomeone (hopefully you) tried to sign up at CompaRNA with this address, which has an "
            f"account already (user name {existing.username}). Sign in at\n\n  "
            f"{absolute(reverse('owner-login'))}\n\nNo new account was made. If this was not you, ignore "
            "this e-mail."
        )
        transaction.on_commit(lambda: _mail([existing.email], "Sign-up with your address", body))
        return None
    user = get_user_model().objects.create_user(username=username, email=email, password=password)
    user.is_active = False
    user.save(update_fields=["is_active"])
    OwnerProfile.objects.create(user=user, affiliation=affiliation)
    link = absolute(reverse("owner-confirm", args=[confirmation_token(user)]))
    body = (
        f"Hello {username},\n\nsomeone (hopefully you) signed up at CompaRNA as a method owner with this "
        f"address. Confirm it by opening\n\n  {link}\n\nThe link is valid for "
        f"{settings.OWNER_CONFIRM_MAX_AGE_S // 3600} hours. After confirmation CompaRNA's staff approve the "
        "account; you can then register development methods.\n\nIf this was not you, ignore this e-mail."
    )
    transaction.on_commit(lambda: _mail([email], "Confirm your e-mail address", body))
    return user


@transaction.atomic
def confirm_email(token: str):
    """Activate the account a confirmation token names; returns the user (idempotent).

    Raises
    ------
    ConfirmationInvalid
        For a forged, expired or outdated link.
    """
    try:
        data = signing.loads(token, salt=_CONFIRM_SALT, max_age=settings.OWNER_CONFIRM_MAX_AGE_S)
    except signing.SignatureExpired:
        raise ConfirmationInvalid("this confirmation link has expired; sign up again") from None
    except signing.BadSignature:
        raise ConfirmationInvalid("this confirmation link is not valid") from None
    user = get_user_model().objects.filter(pk=data.get("u")).select_for_update().first()
    if user is None or user.email != data.get("e"):
        raise ConfirmationInvalid("this confirmation link is not valid any more")
    profile, _ = OwnerProfile.objects.get_or_create(user=user)
    if profile.email_confirmed_at is None:
        profile.email_confirmed_at = timezone.now()
        profile.save(update_fields=["email_confirmed_at"])
        user.is_active = True
        user.save(update_fields=["is_active"])
        staff = list(
            get_user_model()
            .objects.filter(is_staff=True, is_active=True)
            .exclude(email="")
            .values_list("email", flat=True)
        )
        admin_url = absolute(reverse("admin:owners_ownerprofile_changelist"))
        body = (
            f"{user.username} <{user.email}> ({profile.affiliation or 'no affiliation given'}) confirmed "
            f"their address and awaits approval as a method owner:\n\n  {admin_url}"
        )
        transaction.on_commit(lambda: _mail(staff, "A method owner awaits approval", body))
    return user


@transaction.atomic
def approve_owner(*, profile: OwnerProfile, by) -> bool:
    """Approve a confirmed owner (staff); returns False when there was nothing to do."""
    profile = OwnerProfile.objects.select_for_update().select_related("user").get(pk=profile.pk)
    if profile.approved_at is not None or profile.email_confirmed_at is None:
        return False
    profile.approved_at = timezone.now()
    profile.approved_by = by
    profile.save(update_fields=["approved_at", "approved_by"])
    user = profile.user
    Notice.objects.get_or_create(
        owner=user,
        key="approved",
        defaults={"kind": Notice.Kind.APPROVED, "text": "Your account was approved."},
    )
    body = (
        f"Hello {user.username},\n\nyour CompaRNA method-owner account was approved. Register a "
        f"development method at\n\n  {absolute(reverse('owner-method-new'))}\n\nDevelopment methods are "
        "run and scored on every target and shown only to you; ask for publication when you want them in "
        "the public rankings."
    )
    transaction.on_commit(lambda: _mail([user.email], "Your account was approved", body))
    return True


def mail(to: list[str], subject: str, body: str) -> None:
    """Send an e-mail now (used by the digests)."""
    _mail(to, subject, body)
