"""Where CompaRNA may connect on behalf of a method owner: a guard against server-side request forgery.

A web-service method names its own endpoint, so the endpoint is hostile input: pointed at
``http://127.0.0.1:6379/`` (Redis), ``169.254.169.254`` (a cloud metadata service) or the database's
private address, our worker would send requests into our own network. Every address a host name resolves to
is therefore checked before anything is sent, and the connection is made to the checked address itself (not
resolved a second time, so a name cannot switch to a private address between the check and the connection —
"DNS rebinding"). An address is allowed when it is globally routable, or when it lies in one of the networks
a deployment explicitly allows (``COMPARNA_WEBSERVICE_ALLOWED_NETWORKS``, e.g. ``127.0.0.0/8`` in the tests).
Plain ``http://`` is accepted only for allowed networks (a local test server); the public internet gets
``https://`` with certificate verification. Pure module (standard library and urllib3).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import NewConnectionError
from urllib3.util import connection as _connection

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The environment variable holding the networks allowed despite being private, comma separated CIDRs.
ALLOWED_NETWORKS_ENV = "COMPARNA_WEBSERVICE_ALLOWED_NETWORKS"


class EndpointRefused(OSError):
    """The endpoint resolves to an address CompaRNA must not connect to."""


class Unresolvable(EndpointRefused):
    """The endpoint's host name does not resolve (perhaps only for now)."""


def parse_networks(text: str | Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR networks from ``"127.0.0.0/8, ::1/128"`` (or a list); ``ValueError`` names a bad one."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        try:
            out.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise ValueError(f"{ALLOWED_NETWORKS_ENV}: {item!r} is not a network: {exc}") from None
    return tuple(out)


def allowed_networks_from_env() -> tuple[IPNetwork, ...]:
    return parse_networks(os.environ.get(ALLOWED_NETWORKS_ENV, ""))


def _plain(ip: IPAddress) -> IPAddress:
    # An IPv4-mapped IPv6 address (::ffff:10.0.0.1) reaches the IPv4 host: judge it as that.
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


#: IPv6 prefixes whose addresses carry an IPv4 address that a translator, relay or host stack may deliver
#: to (issue 26): such an address is only as global as the IPv4 address inside it.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix: IPv4 in the low 32 bits
#: Never a public endpoint: IPv4-compatible (deprecated, ``::a.b.c.d``), IPv4-translated
#: (``::ffff:0:a.b.c.d``, RFC 2765) and the local-use NAT64 prefix (RFC 8215), whose embedded address sits
#: where the operator chose.
_REFUSED_V6 = (
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
)


def embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64
    (``64:ff9b::/96``), 6to4 (``2002::/16``) and Teredo (``2001::/32``: its server and its client)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    out: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    if ip in _NAT64 or any(ip in net for net in _REFUSED_V6[:2]):
        out.append(low)
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.extend(ip.teredo)
    return out


def plainly_global(ip: IPAddress) -> bool:
    """Globally routable, not multicast or reserved, and, for an IPv6 address carrying an IPv4 one, that
    IPv4 address too; the IPv6 forms that carry one where a relay or the host's stack would deliver it
    locally (IPv4-compatible, IPv4-translated, local-use NAT64) are refused whatever they carry."""
    ip = _plain(ip)
    if not ip.is_global or ip.is_multicast or ip.is_reserved:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and any(ip in net for net in _REFUSED_V6):
        return False
    return all(v4.is_global and not v4.is_multicast and not v4.is_reserved for v4 in embedded_ipv4(ip))


@dataclass
class Guard:
    """Resolves endpoint hosts and refuses addresses that are not allowed.

    Parameters
    ----------
    allowed : tuple of networks
        Networks allowed although not globally routable (loopback in tests, a partner's VPN, ...).
    """

    allowed: tuple[IPNetwork, ...] = ()
    #: Sockets opened through this guard (the caller's watchdog closes them at its deadline).
    sockets: list[socket.socket] = field(default_factory=list)

    def in_allowed(self, ip: IPAddress) -> bool:
        ip = _plain(ip)
        return any(ip.version == net.version and ip in net for net in self.allowed)

    def address_allowed(self, ip: IPAddress) -> bool:
        """Allowed: inside an allowed network, or plainly global (:func:`plainly_global`: not private,
        loopback, link-local, multicast, reserved, unspecified, shared 100.64/10, documentation, ..., and no
        IPv4 address inside that is any of these)."""
        ip = _plain(ip)
        return self.in_allowed(ip) or plainly_global(ip)

    def resolve(self, host: str, port: int) -> list[tuple[int, str]]:
        """Every (family, address) ``host`` resolves to, all checked.

        Raises
        ------
        EndpointRefused
            When the name does not resolve or any of its addresses is not allowed (a name with one public
            and one private address is refused: the choice between them is not ours to make).
        """
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError) as exc:
            raise Unresolvable(f"host {host!r} does not resolve ({exc})") from None
        out: list[tuple[int, str]] = []
        for family, _type, _proto, _canon, sockaddr in infos:
            address = str(sockaddr[0]).split("%", 1)[0]
            ip = ipaddress.ip_address(address)
            if not self.address_allowed(ip):
                raise EndpointRefused(
                    f"host {host!r} resolves to {ip}, a private, loopback or reserved address; CompaRNA "
                    f"does not connect there (a deployment may allow networks in {ALLOWED_NETWORKS_ENV})"
                )
            if (family, address) not in out:
                out.append((family, address))
        if not out:
            raise Unresolvable(f"host {host!r} has no address")
        return out

    def check_scheme(self, scheme: str, addresses: list[tuple[int, str]]) -> None:
        """Plain HTTP only inside allowed networks; HTTPS elsewhere."""
        if scheme == "http" and not all(self.in_allowed(ipaddress.ip_address(a)) for _, a in addresses):
            raise EndpointRefused("plain http:// is accepted only for allowed local networks; use https://")

    def connect(self, conn: HTTPConnection) -> socket.socket:
        """Open the connection of ``conn`` to a checked address of its host."""
        addresses = self.resolve(conn._dns_host, conn.port)  # noqa: SLF001 - the host urllib3 would resolve
        last: OSError | None = None
        for _family, address in addresses:
            try:
                sock = _connection.create_connection(
                    (address, conn.port),
                    conn.timeout,
                    source_address=conn.source_address,
                    socket_options=conn.socket_options,
                )
            except OSError as exc:
                last = exc
                continue
            self.sockets.append(sock)
            return sock
        raise NewConnectionError(conn, f"Failed to establish a new connection: {last}")

    def close_all(self) -> None:
        """Shut down every socket opened so far (a blocked read returns at once)."""
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def guarded_connection_classes(guard: Guard) -> tuple[type[HTTPConnection], type[HTTPSConnection]]:
    """urllib3 connection classes that connect only through ``guard`` (TLS still verifies the host name)."""

    class GuardedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return guard.connect(self)

    class GuardedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return guard.connect(self)

    return GuardedHTTPConnection, GuardedHTTPSConnection
