"""Method owners' accounts, API tokens, uploaded image archives and the notices of their e-mail digest."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


class OwnerProfile(models.Model):
    """What CompaRNA knows of a method owner beyond Django's user: confirmation, approval, preferences.

    Sign-up makes an inactive user; confirming the e-mail address activates it (the owner can sign in,
    make API tokens and see their page); staff approval lets them register methods.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owner_profile"
    )
    affiliation = models.CharField(max_length=200, blank=True)
    email_confirmed_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    notify = models.BooleanField(default=True, help_text="Send e-mail digests of the owner's methods.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user.username} ({self.state})"

    @property
    def state(self) -> str:
        if self.email_confirmed_at is None:
            return "e-mail not confirmed"
        return "approved" if self.approved_at else "awaiting approval"

    @property
    def approved(self) -> bool:
        return self.approved_at is not None and self.user.is_active


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """A secret for the API (``Authorization: Token <key>``): only its SHA-256 is stored, the key is shown
    once when made. Revoked tokens stay listed (with when they were last used)."""

    PREFIX = "crna_"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The key's first characters, to recognise it.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"

    @classmethod
    def issue(cls, *, user, name: str) -> tuple[ApiToken, str]:
        """A new token of ``user``; returns it with its key (never stored, shown once)."""
        key = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user, name=name, prefix=key[: len(cls.PREFIX) + 6], digest=_digest(key)
        )
        return token, key

    @classmethod
    def find(cls, key: str) -> ApiToken | None:
        """The live token with this key, or None."""
        if not key.startswith(cls.PREFIX) or len(key) > 200:
            return None
        return (
            cls.objects.select_related("user")
            .filter(digest=_digest(key), revoked_at__isnull=True, user__is_active=True)
            .first()
        )

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class ImageUpload(models.Model):
    """An image archive an owner uploaded (checked and kept by :mod:`predictors.core.image_archive`)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="image_uploads"
    )
    sha256 = models.CharField(max_length=64)
    filename = models.CharField(max_length=200, blank=True)
    size = models.BigIntegerField()
    info = models.JSONField(default=dict, help_text="Format, layers, sizes and the image's own entrypoint.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "sha256"], name="imageupload_unique_owner_sha")
        ]

    def __str__(self) -> str:
        return f"{self.filename or 'archive'} ({self.sha256[:12]}, {self.size / 2**20:.1f} MB)"


class Notice(models.Model):
    """One item of an owner's e-mail digest; ``key`` makes recording it idempotent."""

    class Kind(models.TextChoices):
        APPROVED = "approved", "account approved"
        PUBLISHED = "published", "method made public"
        DATASET_FINISHED = "dataset_finished", "method finished a dataset"
        RANK_CHANGED = "rank_changed", "rank changed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notices")
    method = models.ForeignKey(
        "predictors.Method", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=24, choices=Kind.choices)
    key = models.CharField(max_length=200)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="notice_unique_key")]

    def __str__(self) -> str:
        return f"{self.owner}: {self.text[:60]}"


class AttemptCount(models.Model):
    """A counter of attempts (failed sign-ins per account or address, sign-ups per address) within a window,
    shared by every web process through the database (issue 36): never evicted by other traffic, and the
    same for ``make run`` (SQLite) and a deployment (PostgreSQL). ``key`` is a hash of what is counted."""

    key = models.CharField(max_length=80, unique=True)
    count = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.count} until {self.expires_at:%H:%M:%S}"
