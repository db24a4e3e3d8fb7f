from __future__ import annotations

from django.apps import AppConfig


class OwnersConfig(AppConfig):
    """Method owners (issue 17): accounts with e-mail confirmation and staff approval, their development
    methods managed without the admin, API tokens and uploads, e-mail digests and public Atom feeds."""

    name = "comparna.owners"
    label = "owners"
    verbose_name = "Method owners"
