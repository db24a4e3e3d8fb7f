"""Password reset for owners (issue 36): Django's auth views with the project's e-mail backend and pages.

The request page answers the same whether the address has an account, and mails either way (in about the
same time: one mail each); requests are counted per client
address (the sign-up budget's window and limit) and an address is mailed at most that often too. The new
password goes through Django's validators (``AUTH_PASSWORD_VALIDATORS``), as on sign-up.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm
from django.shortcuts import render
from django.urls import reverse, reverse_lazy

from comparna.owners.accounts import _mail, _mail_within_limit, absolute
from comparna.owners.counters import attempt_key, count_attempt
from comparna.owners.throttle import client_address


class OwnerPasswordResetForm(PasswordResetForm):
    """Mails through the project's backend, each address at most the sign-up budget a window.

    An address without an active account is mailed too (that no reset was possible), so that the request
    costs one mail either way: Django's form mails only known addresses, in the request, and the time of
    the answer (an SMTP round trip or none) told whether an address had an account (issue 36)."""

    def save(self, *args, **kwargs):
        email = self.cleaned_data["email"]
        if any(True for _ in self.get_users(email)):
            return super().save(*args, **kwargs)
        if _mail_within_limit(email):
            _mail([email], "Password reset", (
                "Hello,\n\nsomeone (hopefully you) asked to reset the password of a CompaRNA account with "
                "this address. There is no active account with it, so nothing was changed. Sign up at\n\n  "
                f"{absolute(reverse('owner-signup'))}\n\nIf this was not you, ignore this e-mail."
            ))
        return None

    def send_mail(self, subject_template_name, email_template_name, context, from_email, to_email,
                  html_email_template_name=None):
        if not _mail_within_limit(to_email):
            return
        context = {**context, "site_url": settings.SITE_URL.rstrip("/")}
        super().send_mail(
            subject_template_name,
            email_template_name,
            context,
            from_email,
            to_email,
            html_email_template_name,
        )


class OwnerPasswordResetView(auth_views.PasswordResetView):
    """``/account/password-reset/``: asks for the address and mails a one-time link."""

    template_name = "owners/password_reset_form.html"
    email_template_name = "owners/password_reset_email.txt"
    subject_template_name = "owners/password_reset_subject.txt"
    form_class = OwnerPasswordResetForm
    success_url = reverse_lazy("password_reset_done")

    def post(self, request, *args, **kwargs):
        count = count_attempt(
            key=attempt_key("reset-addr", client_address(request)), window_s=settings.SIGNUP_WINDOW_S
        )
        if count > settings.SIGNUPS_PER_ADDRESS:
            return render(
                request, self.template_name, {"form": self.get_form_class()(), "too_many": True}, status=429
            )
        return super().post(request, *args, **kwargs)


class OwnerPasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "owners/password_reset_done.html"


class OwnerPasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "owners/password_reset_confirm.html"
    success_url = reverse_lazy("password_reset_complete")


class OwnerPasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "owners/password_reset_complete.html"
