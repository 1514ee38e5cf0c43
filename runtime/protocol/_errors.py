"""Every JSON-RPC and MCP error code this runtime puts on the wire, with one builder each.

Codes: JSON-RPC 2.0 section 5.1 (-32700..-32603); MCP 2025-11-25 "Error Handling" (-32002
resource not found); MCP 2026-07-28 basic/errors (-32020 header mismatch, -32021 missing
client capability, -32022 unsupported protocol version). -32001 (request timeout) and
-32000 (connection closed) match what the official SDKs send. -32003 (forbidden) and -32010
(server overloaded) are this runtime's own, from the implementation-defined server-error
range -32000..-32099 (JSON-RPC 2.0 section 5.1); clients read them by their ``data``.

A builder returns a :class:`JSONRPCError`; raise it from anywhere below the one boundary that
turns exceptions into replies (``runtime.core.Dispatcher.dispatch`` for handlers, the reader
and the HTTP layer for what arrives before a handler), or encode it with ``error_reply``.
"""

from __future__ import annotations

import math
from typing import Any, Final

__all__ = [
    "CONNECTION_CLOSED",
    "FORBIDDEN",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "SERVER_OVERLOADED",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "JSONRPCError",
    "ResourceNotFoundError",
    "ToolError",
    "connection_closed",
    "duplicate_request_id",
    "forbidden",
    "framing_error",
    "header_mismatch",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "missing_capability",
    "overloaded",
    "parse_error",
    "peer_timeout",
    "rate_limited",
    "replica_gone",
    "request_timeout",
    "shutting_down",
    "store_unavailable",
    "unsupported_version",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001
RESOURCE_NOT_FOUND: Final = -32002
FORBIDDEN: Final = -32003
SERVER_OVERLOADED: Final = -32010
HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022


class JSONRPCError(Exception):
    """An error that becomes a JSON-RPC error object on the wire, exactly as given.

    Raise it from a handler to answer with a specific code; any other exception a handler
    raises becomes -32603 with a generic message (see ``runtime.core.Dispatcher``).
    ``request_id`` is the id to answer with when the error is found before a handler runs
    (an invalid request whose id could still be read); handlers never need it.
    """

    #: The error object's JSON, when it was encoded once ahead of use (``prepare_error``):
    #: for an error answered many times, only the id differs from one reply to the next.
    encoded: bytes | None = None

    def __init__(
        self, code: int, message: str, data: Any = None, *, request_id: Any = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.request_id = request_id

    def __repr__(self) -> str:
        return f"JSONRPCError({self.code}, {self.message!r})"

    @classmethod
    def invalid_params(cls, message: str, data: Any = None) -> JSONRPCError:
        return cls(INVALID_PARAMS, message, data)

    @classmethod
    def method_not_found(cls, method: str) -> JSONRPCError:
        return method_not_found(method)


class ToolError(Exception):
    """Raise from a tool to fail with exactly this message as the ``isError: true`` text.

    Not a protocol error: MCP 2025-11-25 server/tools, "Tool Execution Errors", reports a
    tool's own failure inside a successful result so the model can see it. Any other
    exception from a tool also becomes an ``isError`` result, prefixed by the tool's name.
    """


class ResourceNotFoundError(JSONRPCError):
    """Raise from a resource function when the URI names nothing: -32002 in the handshake
    era (MCP 2025-11-25 server/resources, "Error Handling")."""

    def __init__(self, uri: str, message: str = "Resource not found") -> None:
        super().__init__(RESOURCE_NOT_FOUND, message, {"uri": uri})


# -- builders: one per error, so a message and its data are spelled in one place -----------


def parse_error(detail: object) -> JSONRPCError:
    """-32700: the bytes are not JSON (JSON-RPC 2.0 section 5.1). Answered with id null."""
    return JSONRPCError(PARSE_ERROR, f"Parse error: {detail}")


def framing_error(reason: str, *, oversized: bool) -> JSONRPCError:
    """A frame the framer refused, answered with id null: a frame over the size cap is a
    message we decline (-32600); any other framing fault means the bytes are not JSON-RPC
    text at all (-32700)."""
    return JSONRPCError(INVALID_REQUEST if oversized else PARSE_ERROR, f"Framing error: {reason}")


def invalid_request(reason: str, request_id: Any = None, data: Any = None) -> JSONRPCError:
    """-32600: valid JSON that is not an acceptable JSON-RPC message, batch or request."""
    return JSONRPCError(INVALID_REQUEST, f"Invalid Request: {reason}", data, request_id=request_id)


def duplicate_request_id(request_id: Any) -> JSONRPCError:
    """-32600 for a request whose id is one already in flight (JSON-RPC 2.0 section 4: the id
    correlates the response, so two in flight at once could not be told apart)."""
    return invalid_request(f"Duplicate request id {request_id!r} is in flight")


def method_not_found(method: str) -> JSONRPCError:
    return JSONRPCError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


def invalid_params(detail: str, path: str | None = None, **data: Any) -> JSONRPCError:
    """-32602 ``Invalid params: detail``; ``path`` names the offending field."""
    if path is not None:
        data = {"path": path, **data}
    return JSONRPCError(INVALID_PARAMS, f"Invalid params: {detail}", data or None)


def internal_error() -> JSONRPCError:
    """-32603 with a generic message: the detail goes to the log, never to the wire."""
    return JSONRPCError(INTERNAL_ERROR, "Internal error")


def connection_closed() -> JSONRPCError:
    """-32000: a server-to-client request whose connection ended before the answer."""
    return JSONRPCError(CONNECTION_CLOSED, "Connection closed")


def shutting_down() -> JSONRPCError:
    """-32000 for a request the server's shutdown cut short after its grace period: every
    accepted request gets one reply (DESIGN.md; issue 16 item 4)."""
    return JSONRPCError(CONNECTION_CLOSED, "Server is shutting down: request not finished")


def store_unavailable(what: str = "Session", correlation_id: str | None = None) -> JSONRPCError:
    """-32603 for a request the shared store (``runtime.stores``) could not serve: the state
    it needs (``what``: sessions, tasks) is unreachable for now. The detail (the store's
    address, its exception) goes to the log only, under ``correlation_id``, which the
    client gets as ``data.correlationId`` to quote."""
    data = None if correlation_id is None else {"correlationId": correlation_id}
    return JSONRPCError(INTERNAL_ERROR, f"{what} store unavailable", data)


def replica_gone(what: str) -> JSONRPCError:
    """-32603 for a request or task (``what``) whose replica stopped before it ended: its
    lease in the shared store ran out (``runtime.stores``, ``Store.lease``), so no answer
    will come from it."""
    return JSONRPCError(
        INTERNAL_ERROR, f"the replica running this {what} stopped (its lease expired)"
    )


def request_timeout(timeout_seconds: float | None) -> JSONRPCError:
    """-32001: the request outlived ``Limits.request_timeout`` and was cancelled."""
    return JSONRPCError(REQUEST_TIMEOUT, "Request timed out", {"timeoutSeconds": timeout_seconds})


def peer_timeout(method: str) -> JSONRPCError:
    """-32001 raised in the handler whose server-to-client request got no answer in time."""
    return JSONRPCError(REQUEST_TIMEOUT, f"Request {method!r} timed out")


def forbidden(message: str, **data: Any) -> JSONRPCError:
    """-32003: the caller is authenticated but may not do this (in-band, where no HTTP
    status can say 403: a WebSocket message)."""
    return JSONRPCError(FORBIDDEN, message, data or None)


def overloaded(reason: str, **data: Any) -> JSONRPCError:
    """-32010 ``Server overloaded: reason``: a bound was hit; ``data`` names the limit so a
    client can back off (DESIGN.md "Bounded everything")."""
    return JSONRPCError(SERVER_OVERLOADED, f"Server overloaded: {reason}", data or None)


def rate_limited(retry_after_seconds: float, limit: str) -> JSONRPCError:
    """-32010 for a request refused by a rate limit (``runtime.middleware.RateLimit``):
    ``data.retryAfterMs`` says when a token is back, ``data.limit`` which bucket ran dry.
    A modern HTTP answer carrying it is 429 with ``Retry-After`` (RFC 6585 section 4)."""
    retry_ms = max(1, math.ceil(retry_after_seconds * 1000))
    return JSONRPCError(
        SERVER_OVERLOADED,
        "Server overloaded: rate limit exceeded",
        {"limit": limit, "retryAfterMs": retry_ms},
    )


def header_mismatch(reason: str) -> JSONRPCError:
    """-32020 (2026-07-28 basic/transports/streamable-http, "Server Validation")."""
    return JSONRPCError(HEADER_MISMATCH, f"Header mismatch: {reason}")


def missing_capability(message: str, required: dict[str, Any]) -> JSONRPCError:
    """-32021 with ``data.requiredCapabilities`` (2026-07-28 basic/errors)."""
    return JSONRPCError(MISSING_CLIENT_CAPABILITY, message, {"requiredCapabilities": required})


def unsupported_version(requested: str, supported: list[str] | tuple[str, ...]) -> JSONRPCError:
    """-32022 with the versions this server speaks (2026-07-28 basic/versioning)."""
    return JSONRPCError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {requested}",
        {"supported": list(supported), "requested": requested},
    )
