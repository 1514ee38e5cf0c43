"""Plain request/response endpoints an ``AuthConfig`` brings beside the MCP endpoint.

An authorization server inside the runtime (``runtime.authserver``) serves its endpoints
(RFC 8414 metadata, authorize, token, revocation, registration, a JWKS) from the same
listener as ``/mcp``. They are ordinary request/response exchanges, so the HTTP transport
hands them a ``RouteRequest`` and writes back the ``RouteResponse``: no transport type
crosses the seam, and none of them needs a bearer token (they are how one is obtained).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Route", "RouteRequest", "RouteResponse"]


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """One request: ``target`` as sent (path and query), ``headers`` by lower-case name
    (repeated fields joined with ", "), ``body`` whole (bounded by the transport's body
    limit)."""

    method: str
    target: str
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class RouteResponse:
    """One response: ``headers`` are (name, value) pairs of visible ASCII."""

    status: int
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: Sequence[tuple[str, str]] = field(default_factory=tuple)


#: An endpoint: answers a request. Raising is a 500 with a generic body (logged); it must not
#: block (it runs in the connection's task) and cancellation propagates.
Route = Callable[[RouteRequest], Awaitable[RouteResponse]]
