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
    "bad_request_state",
    "batch_forbidden",
    "cancellation_unconfirmed",
    "client_overloaded",
    "connection_closed",
    "duplicate_request",
    "forbidden",
    "framing_error",
    "header_mismatch",
    "http_failure",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "malformed_error_object",
    "method_not_found",
    "missing_capability",
    "overloaded",
    "parse_error",
    "peer_timeout",
    "rate_limited",
    "relayed_error",
    "replica_gone",
    "request_timeout",
    "resource_not_found",
    "shutting_down",
    "store_unavailable",
    "task_cancelled",
    "task_ended",
    "unknown_task",
    "unsupported_version",
    "upstream_error",
    "upstream_timeout",
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
        self.uri = uri


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


def duplicate_request(request_id: Any) -> JSONRPCError:
    """-32600 for a request whose id is already in flight on the connection: ids correlate
    answers with requests (JSON-RPC 2.0 section 4), so a second one could not be told apart.
    Either side refuses it so (the server's request table, the client's)."""
    return invalid_request(f"Duplicate request id {request_id!r} is in flight", request_id)


def method_not_found(method: str) -> JSONRPCError:
    return JSONRPCError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


def invalid_params(detail: str, path: str | None = None, **data: Any) -> JSONRPCError:
    """-32602 ``Invalid params: detail``; ``path`` names the offending field."""
    if path is not None:
        data = {"path": path, **data}
    return JSONRPCError(INVALID_PARAMS, f"Invalid params: {detail}", data or None)


def batch_forbidden(reason: str) -> JSONRPCError:
    """-32600 with ``reason`` as the whole message: a batch the connection's or session's
    revision does not allow, refused whole before any item is read (``batch_refusal``
    words the reason)."""
    return JSONRPCError(INVALID_REQUEST, reason)


def malformed_error_object(peer: str) -> JSONRPCError:
    """-32600: ``peer`` answered one of our requests with an ``error`` member that is not a
    JSON-RPC error object (JSON-RPC 2.0 section 5.1: ``code`` an integer, ``message`` a
    string); the request it answers fails with this instead."""
    return JSONRPCError(INVALID_REQUEST, f"Malformed error object from {peer}")


def relayed_error(code: Any, message: Any, data: Any = None) -> JSONRPCError:
    """A peer's JSON-RPC error answered on as the peer gave it (a client's answer to a
    server-to-client request, a task's recorded failure, a proxy's remote): the same code,
    message and data. JSON-RPC 2.0 section 5.1 makes the code an integer: one that is not
    (``true``, ``1.5``, a string; Python counts ``True`` as an int) is -32603 here, never
    passed on."""
    return JSONRPCError(code if type(code) is int else INTERNAL_ERROR, str(message), data)


def resource_not_found(
    uri: str, message: str = "Resource not found", *, modern: bool = False
) -> JSONRPCError:
    """A URI that names no resource: -32002 in the handshake era (2025-11-25
    server/resources, "Error Handling"), -32602 from 2026-07-28 on (its changelog, minor
    change 6), with the URI in ``data``."""
    return JSONRPCError(INVALID_PARAMS if modern else RESOURCE_NOT_FOUND, message, {"uri": uri})


def bad_request_state(reason: str) -> JSONRPCError:
    """-32602 with ``reason`` as the whole message: a multi-round-trip request's
    ``requestState`` this server cannot take (forged, expired, issued for another request or
    to another principal; 2026-07-28 basic/patterns/mrtr)."""
    return JSONRPCError(INVALID_PARAMS, reason)


def internal_error() -> JSONRPCError:
    """-32603 with a generic message: the detail goes to the log, never to the wire."""
    return JSONRPCError(INTERNAL_ERROR, "Internal error")


def connection_closed() -> JSONRPCError:
    """-32000: a server-to-client request whose connection ended before the answer."""
    return JSONRPCError(CONNECTION_CLOSED, "Connection closed")


def shutting_down() -> JSONRPCError:
    """-32000 for a request the server's shutdown cut short after its grace period: every
    accepted request gets one reply (DESIGN.md)."""
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


def client_overloaded(reason: str, **data: Any) -> JSONRPCError:
    """-32010 ``Client overloaded: reason``, the client's side of :func:`overloaded`: the
    server sent more requests (sampling, elicitation, roots, ping) than the client serves at
    once; ``data`` names the limit."""
    return JSONRPCError(SERVER_OVERLOADED, f"Client overloaded: {reason}", data or None)


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


def http_failure(status: int, detail: str, data: Any = None) -> JSONRPCError:
    """-32000 ``HTTP status: detail``: how a client reports an HTTP answer that carries no
    JSON-RPC error of its own (a 500 with an HTML page, a 401 from a proxy), as the first code
    of the implementation-defined range (JSON-RPC 2.0 section 5.1), the code the official
    SDKs give a failed transport. ``detail`` is the start of the body, or the message of a
    JSON-RPC error sent for no request of ours (id null)."""
    return JSONRPCError(CONNECTION_CLOSED, f"HTTP {status}: {detail}", data)


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


# -- tasks (2025-11-25 basic/utilities/tasks; the io.modelcontextprotocol/tasks extension) ---


def unknown_task(task_id: str) -> JSONRPCError:
    """-32602 ``Unknown task``: no task has this id (never made, or expired), or none the
    caller may see. The id is echoed in ``data``, cut to 100 characters: the peer chose it."""
    return JSONRPCError(INVALID_PARAMS, "Unknown task", {"taskId": task_id[:100]})


def task_ended(task_id: str, status: str) -> JSONRPCError:
    """-32602 ``Task is already <status>``: a ``tasks/cancel`` of a task in a terminal
    status (2025-11-25 basic/utilities/tasks, "Cancelling Tasks")."""
    return JSONRPCError(INVALID_PARAMS, f"Task is already {status}", {"taskId": task_id})


def task_cancelled(task_id: str) -> JSONRPCError:
    """-32602 ``Task was cancelled``: a 2025-11-25 ``tasks/result`` of a cancelled task,
    which has no result to give."""
    return JSONRPCError(INVALID_PARAMS, "Task was cancelled", {"taskId": task_id})


def cancellation_unconfirmed(task_id: str, by: str) -> JSONRPCError:
    """-32603: a 2025-11-25 ``tasks/cancel`` answers with the cancelled task, and ``by``
    (whoever runs it) did not report it cancelled in time."""
    return JSONRPCError(
        INTERNAL_ERROR, f"Task cancellation not confirmed by {by}", {"taskId": task_id}
    )


# -- a proxy's errors: what went wrong beyond this server ------------------------------------


def upstream_error(message: str, data: Any = None) -> JSONRPCError:
    """-32603 with ``message``: a request a proxy could not have answered by the server
    behind it (unreachable, gone, an answer outside MCP's schema). Unlike
    :func:`internal_error` the message is for the client: it says what failed beyond this
    server, never a traceback or a secret."""
    return JSONRPCError(INTERNAL_ERROR, message, data)


def upstream_timeout(method: str, timeout_seconds: float, limit: str) -> JSONRPCError:
    """-32001: the server behind a proxy did not answer ``method`` within
    ``timeout_seconds`` (the proxy's limit named ``limit``), so the proxy cancelled it
    there."""
    return JSONRPCError(
        REQUEST_TIMEOUT,
        f"Request timed out: the remote MCP server did not answer {method} "
        f"within {timeout_seconds:g} s ({limit})",
        {"timeoutSeconds": timeout_seconds, "limit": limit},
    )
