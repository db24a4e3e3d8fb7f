"""Login throttling per account and per address (issue 26), kept in the Django cache.

Every failed sign-in counts against the account named (casefolded, whether it exists or not, so the answer
says nothing about which accounts exist) and against the client's address. Once either count reaches its
limit within the window, every sign-in for that account or from that address is refused with a clear
message until the window has passed — the right password included, so guessing cannot go on behind the
lock. A successful sign-in clears its account's count (never the address's: one known account must not
reset the count of an address guessing others).

The counts live in the default cache: shared by every process when it is Redis (``COMPARNA_CACHE_URL``, as
in ``make run`` and docker-compose); with the in-process fallback each web process counts on its own.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache


def _limits() -> tuple[int, int, int]:
    return (
        int(getattr(settings, "LOGIN_FAILURES_PER_ACCOUNT", 5)),
        int(getattr(settings, "LOGIN_FAILURES_PER_ADDRESS", 20)),
        int(getattr(settings, "LOGIN_LOCKOUT_S", 900)),
    )


def _key(kind: str, value: str) -> str:
    # hashed: a user name or address of any length or character makes a valid, fixed-size cache key
    return f"login-failures:{kind}:{hashlib.sha256(value.encode()).hexdigest()[:32]}"


def _keys(username: str, address: str) -> tuple[str, str]:
    return _key("account", (username or "").strip().casefold()), _key("address", address or "")


def client_address(request) -> str:
    """The address the request came from: the socket's peer, or behind a trusted proxy
    (``settings.TRUSTED_PROXIES``) the last address of X-Forwarded-For that is not one (a header from
    anyone else could name any address, so it is read only from the proxies)."""
    if request is None:
        return ""
    peer = request.META.get("REMOTE_ADDR", "")
    trusted = set(getattr(settings, "TRUSTED_PROXIES", ()))
    if peer not in trusted:
        return peer
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    return next((hop[:64] for hop in reversed(hops) if hop not in trusted), peer)


def locked_out(*, username: str, address: str) -> bool:
    """Whether sign-ins for ``username`` or from ``address`` are refused now."""
    per_account, per_address, _ = _limits()
    account, addr = _keys(username, address)
    counts = cache.get_many([account, addr])
    return counts.get(account, 0) >= per_account or counts.get(addr, 0) >= per_address


def record_failure(*, username: str, address: str) -> None:
    """Count one failed sign-in against the account and the address (each count expires a window after its
    first failure)."""
    _, _, window = _limits()
    for key in _keys(username, address):
        if cache.add(key, 1, timeout=window):
            continue
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=window)


def record_success(*, username: str) -> None:
    """A correct sign-in outside a lockout: its account starts counting afresh."""
    cache.delete(_keys(username, "")[0])


def lockout_message() -> str:
    minutes = max(1, _limits()[2] // 60)
    return (
        "Too many failed sign-ins for this account or from your address. Sign-in is locked for up to "
        f"{minutes} minutes; try again later (the right password does not work before then)."
    )
