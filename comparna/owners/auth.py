"""API authentication by owner token: ``Authorization: Token <key>`` (keys start with ``crna_``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from comparna.owners.models import ApiToken


class OwnerTokenAuthentication(authentication.BaseAuthentication):
    """Knows an owner by one of their live API tokens; a wrong or revoked key is a 401, never anonymous."""

    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization: Token <key> (one key, no spaces)")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("the token is not ASCII") from None
        token = ApiToken.find(key)
        if token is None:
            raise exceptions.AuthenticationFailed("unknown or revoked token")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword


class OwnerTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI description of the owner token (Swagger UI's "Authorize" button)."""

    target_class = "comparna.owners.auth.OwnerTokenAuthentication"
    name = "ownerToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "An owner's API token (made on /account/tokens/), sent as `Token <key>`.",
        }
