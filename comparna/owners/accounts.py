"""Owner accounts: sign-up, e-mail confirmation and staff approval, with the e-mails they send.

Sign-up stores an inactive user (so an unconfirmed address can do nothing) and mails a signed, expiring
confirmation link; following it activates the account and tells the staff that an owner awaits approval;
staff approval (admin action) lets the owner register methods and is mailed to them.
"""

from __future__ import annotations

import logging
import unicodedata
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core import signing
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from comparna.owners.counters import attempt_key, count_attempt
from comparna.owners.models import Notice, OwnerProfile
from comparna.owners.names import skeleton
from comparna.owners.throttle import account_key

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


def quoted(text: str, limit: int = 300) -> str:
    """Free text (an affiliation, a program name) as one quoted line of an e-mail to staff: line breaks,
    controls and separators written as escapes, so that no text makes a paragraph of its own (issue 36)."""
    out = []
    for ch in str(text)[:limit]:
        cat = unicodedata.category(ch)
        if ch == "\\" or ch == '"' or (cat[0] in ("C", "Z") and ch != " "):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + ("…" if len(text) > limit else "") + '"'


def name_unavailable(username: str) -> bool:
    """Whether ``username`` is, or looks like, an existing user's name: the same lock key
    (:func:`comparna.owners.throttle.account_key`) or the same confusables skeleton
    (:func:`comparna.owners.names.skeleton`). Owners are a few hundred at most: every name is read."""
    key, look = account_key(username), skeleton(username)
    return any(
        account_key(other) == key or skeleton(other) == look
        for other in get_user_model().objects.values_list("username", flat=True).iterator()
    )


def _mail_within_limit(email: str) -> bool:
    """Whether this address may be mailed by one more sign-up (a per-address budget: sign-up never mails one
    address more than ``SIGNUPS_PER_ADDRESS`` times a window, whoever asks)."""
    count = count_attempt(
        key=attempt_key("signup-mail", email.strip().casefold()), window_s=settings.SIGNUP_WINDOW_S
    )
    return count <= settings.SIGNUPS_PER_ADDRESS


@transaction.atomic
def sign_up(*, username: str, email: str, password: str, affiliation: str = ""):
    """Store a new, inactive owner account and mail its confirmation link; returns it.

    Whatever exists, the caller answers the same and this takes about as long (issue 36: one password hash
    on every path, no account told apart by the page or its timing):

    - an address that has an account already (compared case-insensitively) gets no second one: its owner is
      told by e-mail (issue 26);
    - a user name that is taken, or looks like a taken one, makes no account: the address is told to choose
      another.

    Returns None in both cases. An address is mailed at most ``SIGNUPS_PER_ADDRESS`` times a window.
    """
    User = get_user_model()
    existing = User.objects.filter(email__iexact=email).first()
    taken = existing is None and name_unavailable(username)
    if existing is not None or taken:
        make_password(password)  # the hashing work of a new account: the same time either way
        if not _mail_within_limit(email):
            return None
        if existing is not None:
            body = (
                "Hello,\n\nsomeone (hopefully you) tried to sign up at CompaRNA with this address, which has "
                f"an account already (user name {existing.username}). Sign in at\n\n  "
                f"{absolute(reverse('owner-login'))}\n\nForgot the password? Set a new one at\n\n  "
                f"{absolute(reverse('password_reset'))}\n\nNo new account was made. If this was not you, "
                "ignore this e-mail."
            )
            to, subject = existing.email, "Sign-up with your address"
        else:
            body = (
                "Hello,\n\nsomeone (hopefully you) tried to sign up at CompaRNA with this address and the "
                f"user name {username}, which is taken or looks too much like a taken one. No account was "
                f"made: sign up again with another user name at\n\n  {absolute(reverse('owner-signup'))}\n\n"
                "If this was not you, ignore this e-mail."
            )
            to, subject = email, "Choose another user name"
        transaction.on_commit(lambda: _mail([to], subject, body))
        return None
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=password)
    except IntegrityError:  # the same name signed up at the same moment
        return None
    user.is_active = False
    user.save(update_fields=["is_active"])
    OwnerProfile.objects.create(user=user, affiliation=affiliation)
    if not _mail_within_limit(email):
        return user
    link = absolute(reverse("owner-confirm", args=[confirmation_token(user)]))
    body = (
        f"Hello {username},\n\nsomeone (hopefully you) signed up at CompaRNA as a method owner with this "
        f"address. Confirm it by opening\n\n  {link}\n\nThe link is valid for "
        f"{settings.OWNER_CONFIRM_MAX_AGE_S // 3600} hours (an account not confirmed by then is deleted). "
        "After confirmation CompaRNA's staff approve the account; you can then register development "
        "methods.\n\nIf this was not you, ignore this e-mail."
    )
    transaction.on_commit(lambda: _mail([email], "Confirm your e-mail address", body))
    return user


def expire_unconfirmed_accounts() -> int:
    """Delete the owner accounts whose address was not confirmed within ``OWNER_CONFIRM_MAX_AGE_S`` (their
    link has expired; the name and address are free again). Never staff, never an account that has signed
    in. Returns how many were deleted."""
    cutoff = timezone.now() - timedelta(seconds=settings.OWNER_CONFIRM_MAX_AGE_S)
    stale = get_user_model().objects.filter(
        is_active=False,
        is_staff=False,
        is_superuser=False,
        last_login__isnull=True,
        owner_profile__email_confirmed_at__isnull=True,
        owner_profile__created_at__lt=cutoff,
    )
    return stale.delete()[1].get(get_user_model()._meta.label, 0)


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
            f"{user.username} <{user.email}> confirmed their address and awaits approval as a method owner.\n"
            f"Affiliation (as typed): {quoted(profile.affiliation) if profile.affiliation else 'none'}"
            f"\n\nReview at\n\n  {admin_url}"
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
