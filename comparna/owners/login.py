"""The sign-in forms of the owners' pages and the admin, throttled per account and per address
(:mod:`comparna.owners.throttle`, issue 26)."""

from __future__ import annotations

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from comparna.owners import throttle


class ThrottledLoginMixin:
    """Refuses any sign-in while its account or address is locked out, before the password is checked."""

    def clean(self):
        username = str(self.data.get("username", ""))[:254]
        address = throttle.client_address(self.request)
        if throttle.locked_out(username=username, address=address):
            raise forms.ValidationError(throttle.lockout_message(), code="locked")
        try:
            data = super().clean()
        except forms.ValidationError:
            throttle.record_failure(username=username, address=address)
            raise
        throttle.record_success(username=username)
        return data


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    """The owners' sign-in page (``/account/login/``)."""


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    """The admin's sign-in page (``/admin/login/``): the same limits (an owner's password opens the admin
    for nobody, but a staff password guessed there would)."""
