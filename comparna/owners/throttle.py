"""Login throttling per account and per address (issues 26 and 36), counted in the database.

Every failed sign-in counts against the account named and against the client's address. Once either count
reaches its limit within the window, every sign-in for that account or from that address is refused with a
clear message until the window has passed — the right password included, so guessing cannot go on behind
the lock. A successful sign-in clears its account's count (never the address's: one known account must not
reset the count of an address guessing others).

The account's key is the user name as authentication reads it, made coarser: Django's sign-in form
NFKC-normalises the name (``UsernameField``) and the backend looks it up exactly, so "ｂｏｂ" (fullwidth)
signs in to "bob". The key is NFKC, then casefolded, then NFKC again, without surrounding spaces: every
spelling that signs in to one account has the same key (and case variants share it too, whether they exist
or not, so the answer says nothing about which accounts exist).

The counts live in :class:`~comparna.owners.models.AttemptCount` rows (:mod:`comparna.owners.counters`):
shared by every web process, not evicted by other traffic, in ``make run`` (SQLite) as in a deployment.
"""

from __future__ import annotations

import ipaddress
import unicodedata

from django.conf import settings

from comparna.owners import counters


def _limits() -> tuple[int, int, int]:
    return (
        int(getattr(settings, "LOGIN_FAILURES_PER_ACCOUNT", 5)),
        int(getattr(settings, "LOGIN_FAILURES_PER_ADDRESS", 20)),
        int(getattr(settings, "LOGIN_LOCKOUT_S", 900)),
    )


def account_key(username: str) -> str:
    """The one lock key of every spelling of a user name that signs in to the same account."""
    text = unicodedata.normalize("NFKC", username or "").strip()
    return unicodedata.normalize("NFKC", text.casefold()).strip()


def _keys(username: str, address: str) -> tuple[str, str]:
    return (
        counters.attempt_key("login-acct", account_key(username)),
        counters.attempt_key("login-addr", address or ""),
    )


def _networks(entries) -> list:
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
        except ValueError:
            continue
    return networks


def _trusted(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().split("%")[0])
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in networks)


def client_address(request) -> str:
    """The address the request came from: the socket's peer, or behind a trusted proxy
    (``settings.TRUSTED_PROXIES``: addresses or networks such as ``172.30.0.1`` or ``10.0.0.0/8``) the last
    address of X-Forwarded-For that is not one (a header from anyone else could name any address, so it is
    read only from the proxies)."""
    if request is None:
        return ""
    peer = request.META.get("REMOTE_ADDR", "")
    networks = _networks(getattr(settings, "TRUSTED_PROXIES", ()))
    if not _trusted(peer, networks):
        return peer
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    return next((hop[:64] for hop in reversed(hops) if not _trusted(hop, networks)), peer)


def locked_out(*, username: str, address: str) -> bool:
    """Whether sign-ins for ``username`` or from ``address`` are refused now."""
    per_account, per_address, _ = _limits()
    account, addr = _keys(username, address)
    counts = counters.current_counts([account, addr])
    return counts.get(account, 0) >= per_account or counts.get(addr, 0) >= per_address


def record_failure(*, username: str, address: str) -> None:
    """Count one failed sign-in against the account and the address (each count expires a window after its
    first failure)."""
    _, _, window = _limits()
    for key in _keys(username, address):
        counters.count_attempt(key=key, window_s=window)


def record_success(*, username: str) -> None:
    """A correct sign-in outside a lockout: its account starts counting afresh."""
    counters.clear_attempts(key=_keys(username, "")[0])


def lockout_message() -> str:
    minutes = max(1, _limits()[2] // 60)
    return (
        "Too many failed sign-ins for this account or from your address. Sign-in is locked for up to "
        f"{minutes} minutes; try again later (the right password does not work before then)."
    )
