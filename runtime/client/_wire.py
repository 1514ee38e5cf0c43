"""Everything the client takes from the rest of the runtime, and the wire rules it follows.

This is the one module of ``runtime.client`` that imports other runtime packages (the
sans-IO framers, the error-code constants, the stream framer factory), so that when the wire
rules move into ``runtime.protocol`` only these lines change. The client never imports the
core's ``Connection`` machinery, the handlers or the ``Server``.

The constants below are the client's reading of MCP 2026-07-28 (basic/versioning,
basic/transports/streamable-http, basic/patterns/mrtr) and of the handshake revisions
2024-11-05..2025-11-25.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..core import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..framing import (
    ContentLengthFramer,
    Framer,
    FramingError,
    NdjsonFramer,
    SSEDecoder,
    SSEEvent,
    escape_excerpt,
)
from ..transports import open_fifo_pair, pipe_client_lock, pipe_paths

__all__ = [
    "CLIENT_VERSION",
    "HANDSHAKE_VERSIONS",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_HANDSHAKE_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "METHOD_NOT_FOUND",
    "MODERN_VERSION",
    "NAMED_METHODS",
    "PARSE_ERROR",
    "REPEATABLE_METHODS",
    "REQUEST_TIMEOUT",
    "TASKS_EXTENSION",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "ContentLengthFramer",
    "Framer",
    "FramingError",
    "Incoming",
    "NdjsonFramer",
    "SSEDecoder",
    "SSEEvent",
    "decode_incoming",
    "encode_header_value",
    "escape_excerpt",
    "make_framer",
    "open_fifo_pair",
    "pipe_client_lock",
    "pipe_paths",
]

from .._version import __version__ as CLIENT_VERSION

#: The stateless revision (2026-07-28): no handshake, per-request ``_meta``.
MODERN_VERSION: Final = "2026-07-28"
#: Handshake-era revisions this client can speak, newest first.
HANDSHAKE_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[0]

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

#: 2026-07-28 streamable-http "Request Metadata": the params field mirrored into Mcp-Name.
NAMED_METHODS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

#: Requests a client may send again when it cannot know whether the first copy arrived:
#: they change nothing on the server (lists, reads, discovery, polling a task, a listen
#: stream, which the server re-acknowledges). ``tools/call`` is not among them: a tool may
#: have effects, and only the caller can say that repeating it is harmless.
REPEATABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "tasks/get",
        "tasks/list",
        "tasks/result",
        "subscriptions/listen",
    }
)


def make_framer(framing: str, max_frame_size: int) -> Framer:
    """The sans-IO framer for a stream transport: ``ndjson`` or ``content-length``."""
    if framing == "ndjson":
        return NdjsonFramer(max_frame_size=max_frame_size)
    if framing == "content-length":
        return ContentLengthFramer(max_frame_size=max_frame_size)
    raise ValueError(f"unknown framing {framing!r} (expected 'ndjson' or 'content-length')")


class Incoming(msgspec.Struct):
    """One JSON-RPC message from the server, decoded once; ``params`` and ``result`` stay raw
    until the method that asked decodes them into its own result type."""

    jsonrpc: str | UnsetType = UNSET
    id: int | str | float | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: dict[str, Any] | UnsetType = UNSET


_incoming: Final = msgspec.json.Decoder(Incoming | list[Incoming])


def decode_incoming(data: bytes) -> list[Incoming]:
    """One frame from the server as its messages (a batch reply gives several).

    Raises ``msgspec.DecodeError`` / ``ValueError`` for anything that is not JSON-RPC 2.0.
    """
    decoded = _incoming.decode(data)
    items = decoded if isinstance(decoded, list) else [decoded]
    for item in items:
        if item.jsonrpc != "2.0":
            raise ValueError("not a JSON-RPC 2.0 message (jsonrpc is not '2.0')")
        if item.method is UNSET and item.result is UNSET and item.error is UNSET:
            raise ValueError("neither a request, a notification nor a response")
    return items


# RFC 9110 field values the 2026-07-28 spec lets through unencoded: visible ASCII, space, tab
# (and no leading/trailing whitespace, which HTTP would strip).
_PLAIN_HEADER: Final = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?")


def encode_header_value(value: str) -> str:
    """A value for ``Mcp-Name`` / ``Mcp-Param-*``: as is when it is plain visible ASCII,
    else the spec's Base64 sentinel ``=?base64?...?=`` (2026-07-28 streamable-http,
    "Encoding Header Values")."""
    if _PLAIN_HEADER.fullmatch(value) and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="
