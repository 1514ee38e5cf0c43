"""Connection slots of one listener: how many connections in all, and how many from one client.

``HttpLimits.max_connections`` bounds what a listener holds; without a bound per client one
address could take every slot (twenty clients trickling their bodies held all of
``--max-connections 20`` until the body deadline, while everyone else got 503). So a client
address also has a share, ``HttpLimits.max_connections_per_address`` (half the slots unless
configured): the other half always stays for other addresses. Sans-IO, plain counters: taken
when a connection is accepted, given back when it ends.

A "client address" is an IPv4 address, or an IPv6 /64: one host's usual share of an IPv6
network (RFC 7421), from which it may take as many addresses as it likes. Behind a reverse
proxy every client has the proxy's address: raise the share to ``max_connections`` there
and bound clients at the proxy (docs/deploy.md).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ._edge import HttpLimits

__all__ = ["ConnectionSlots", "address_key"]


def address_key(address: Any) -> str | None:
    """What a peer address (``getpeername()``) counts against: its IPv4 address (an
    IPv4-mapped IPv6 one too), or its IPv6 /64; None when not an IP address (a Unix socket,
    an unknown peer): not counted per address."""
    if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
        return None
    host = address[0].partition("%")[0]  # (a link-local address's zone)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class ConnectionSlots:
    """The slots of one listener (see the module)."""

    __slots__ = ("_by_address", "max_connections", "max_per_address", "open")

    def __init__(self, limits: HttpLimits) -> None:
        self.max_connections = limits.max_connections
        self.max_per_address = limits.connections_per_address
        #: Connections holding a slot now.
        self.open = 0
        self._by_address: dict[str, int] = {}

    def take(self, key: str | None) -> str | None:
        """Take a slot for a connection from ``key`` (``address_key``): None when taken (give
        it back with :meth:`give_back`), else the name of the limit that refuses it (nothing
        is taken)."""
        if self.open >= self.max_connections:
            return "max_connections"
        if key is not None:
            held = self._by_address.get(key, 0)
            if held >= self.max_per_address:
                return "max_connections_per_address"
            self._by_address[key] = held + 1
        self.open += 1
        return None

    def give_back(self, key: str | None) -> None:
        """The connection :meth:`take` admitted ended."""
        self.open -= 1
        if key is not None:
            held = self._by_address[key] - 1
            if held:
                self._by_address[key] = held
            else:
                del self._by_address[key]
