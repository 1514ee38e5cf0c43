"""Everything the client takes from the rest of the runtime, and the wire rules it follows.

This is the one module of ``runtime.client`` that imports other runtime packages: the
sans-IO wire rules (``runtime.protocol``: error codes, versions, ``_meta`` keys, the
``Mcp-Name`` methods), the sans-IO framers and the FIFO helpers. The client never imports the
core, the handlers or the ``Server``: it is a peer of the server, built on the same
bottom layers.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final

import msgspec
import trio
from msgspec import UNSET, Raw, UnsetType

from ..framing import (
    ContentLengthFramer,
    Framer,
    FramingError,
    NdjsonFramer,
    SSEDecoder,
    SSEEvent,
    escape_excerpt,
    loggable,
)
from ..protocol import (
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_HANDSHAKE_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    NAMED_METHODS,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..transports import lifted, open_fifo_pair, pipe_client_lock, pipe_paths

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
    "lifted",
    "loggable",
    "make_framer",
    "open_fifo_pair",
    "pipe_client_lock",
    "pipe_paths",
    "socket_of",
]

from .. import __version__ as CLIENT_VERSION

#: The stateless revision (2026-07-28) this client speaks: no handshake, per-request ``_meta``.
MODERN_VERSION: Final = MODERN_VERSIONS[0]
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

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


def socket_of(stream: trio.abc.SendStream) -> trio.socket.SocketType | None:
    """The socket under a trio stream (a ``SocketStream``, or one under TLS), for its send
    low-water mark (:func:`lifted`); None for any other stream (a pipe, a WebSocket)."""
    if isinstance(stream, trio.SSLStream):
        stream = stream.transport_stream
    return stream.socket if isinstance(stream, trio.SocketStream) else None
