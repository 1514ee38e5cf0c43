"""Which HTTP status a JSON-RPC error gets on a 2026-07-28 Streamable HTTP response.

basic/transports/streamable-http: protocol errors the server detects about the request
itself (parse, shape, headers, version, capabilities) are 400, an unknown method is 404
("Protocol Version Header"); errors a handler produced (invalid arguments, a missing
resource) are ordinary JSON-RPC results of a successful exchange, 200. The handshake era
answers every JSON-RPC error with 200 and its body.

A rate-limit refusal (-32010 whose ``data`` has ``retryAfterMs``, ``rate_limited``) is 429
with ``Retry-After`` on a modern answer (RFC 6585 section 4: "Too Many Requests"): the
status a client's HTTP stack already backs off on.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ._errors import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    SERVER_OVERLOADED,
    UNSUPPORTED_PROTOCOL_VERSION,
)

__all__ = ["ERROR_STATUS", "http_status", "retry_after", "status_of"]

ERROR_STATUS: Final = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


def http_status(code: int) -> int:
    """The status of a modern response carrying error ``code`` (200 for handler errors)."""
    return ERROR_STATUS.get(code, 200)


class _ErrorProbe(msgspec.Struct):
    error: dict[str, object] | None = None


_error_probe: Final = msgspec.json.Decoder(_ErrorProbe)


def status_of(data: bytes) -> int:
    """The HTTP status for a modern JSON answer (``data``, a whole response this runtime
    encoded): 200, or the status of its error's code."""
    # Our replies put "result" or "error" right after the id (and a JSON string id cannot
    # hold either key: its quotes are escaped), so only the bytes before "result" can hold
    # the error member: a whole-body search would read every byte of a 16 MiB result
    # (benchmarks/README.md, "Reading our own replies").
    if data[:1] != b"{":
        return 200
    result_at = data.find(b'"result":')
    if data.find(b'"error":', 0, result_at if result_at >= 0 else len(data)) < 0:
        return 200
    try:
        error = _error_probe.decode(data).error
    except msgspec.DecodeError:
        return 200
    code = error.get("code") if error else None
    if code == SERVER_OVERLOADED and _retry_after_ms(error) is not None:
        return 429
    return http_status(code) if isinstance(code, int) else 200


def _retry_after_ms(error: dict[str, object] | None) -> int | None:
    data = error.get("data") if error else None
    value = data.get("retryAfterMs") if isinstance(data, dict) else None
    return value if isinstance(value, int) and value >= 0 else None


def retry_after(data: bytes) -> str | None:
    """The ``Retry-After`` value (whole seconds, rounded up) of an answer ``status_of``
    called 429, else None."""
    try:
        ms = _retry_after_ms(_error_probe.decode(data).error)
    except msgspec.DecodeError:
        return None
    return None if ms is None else str(-(-ms // 1000))
