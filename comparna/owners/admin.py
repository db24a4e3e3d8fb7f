"""Admin of method owners: approving confirmed accounts (mailed to the owner), tokens, uploads, notices."""

from __future__ import annotations

from django.contrib import admin, messages

from comparna.owners.accounts import approve_owner
from comparna.owners.login import ThrottledAdminAuthenticationForm
from comparna.owners.models import ApiToken, ImageUpload, Notice, OwnerProfile

# The admin's sign-in is throttled like the owners' (issue 26): a staff password is the one worth guessing.
admin.site.login_form = ThrottledAdminAuthenticationForm


@admin.register(OwnerProfile)
class OwnerProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "email", "affiliation", "state", "created_at", "approved_at", "approved_by")
    list_filter = ("approved_at", "email_confirmed_at")
    search_fields = ("user__username", "user__email", "affiliation")
    readonly_fields = ("user", "email_confirmed_at", "approved_at", "approved_by", "created_at")
    actions = ["approve"]

    @admin.display(description="e-mail")
    def email(self, obj: OwnerProfile) -> str:
        return obj.user.email

    @admin.action(description="Approve selected owners (they may then register methods)")
    def approve(self, request, queryset) -> None:
        done = sum(approve_owner(profile=p, by=request.user) for p in queryset)
        skipped = queryset.count() - done
        self.message_user(
            request,
            f"{done} owner(s) approved"
            + (f"; {skipped} skipped (already approved or e-mail not confirmed)" if skipped else "")
            + ".",
            messages.SUCCESS if done else messages.WARNING,
        )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "name", "prefix", "digest", "created_at", "last_used_at")
    search_fields = ("user__username", "name", "prefix")

    def has_add_permission(self, request) -> bool:
        return False  # keys are shown once, to their owner: tokens are made on the owner's page


@admin.register(ImageUpload)
class ImageUploadAdmin(admin.ModelAdmin):
    list_display = ("owner", "filename", "sha256", "size", "created_at")
    readonly_fields = ("owner", "filename", "sha256", "size", "info", "created_at")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Notice)
class NoticeAdmin(admin.ModelAdmin):
    list_display = ("owner", "kind", "text", "created_at", "sent_at")
    list_filter = ("kind", "sent_at")
    readonly_fields = ("owner", "method", "kind", "key", "text", "created_at", "sent_at")
