"""Everything the client takes from the rest of the runtime, and the wire rules it follows.

This is the one module of ``runtime.client`` that imports other runtime packages: the
sans-IO wire rules (``runtime.protocol``: error codes, versions, ``_meta`` keys, the
``Mcp-Name`` methods), the sans-IO framers and the FIFO helpers. The client never imports the
core, the handlers or the ``Server``: it is a peer of the server, built on the same
bottom layers.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any, Final

import msgspec
import trio
from msgspec import Raw

from ..framing import (
    ContentLengthFramer,
    Framer,
    FramingError,
    NdjsonFramer,
    SSEDecoder,
    SSEEvent,
    escape_excerpt,
    loggable,
    redact_url,
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
    SERVER_OVERLOADED,
    TOO_DEEP,
    UNSUPPORTED_PROTOCOL_VERSION,
    Envelope,
    JSONRPCError,
    classify,
    decode_frame,
    decode_item,
    id_key,
    invalid_params,
    invalid_request,
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
    "SERVER_OVERLOADED",
    "TASKS_EXTENSION",
    "TOO_DEEP",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "ContentLengthFramer",
    "Envelope",
    "Framer",
    "FramingError",
    "JSONRPCError",
    "NdjsonFramer",
    "SSEDecoder",
    "SSEEvent",
    "Unreadable",
    "decode_incoming",
    "decode_value",
    "encode_header_value",
    "escape_excerpt",
    "id_key",
    "invalid_params",
    "invalid_request",
    "lifted",
    "loggable",
    "make_framer",
    "open_fifo_pair",
    "pipe_client_lock",
    "pipe_paths",
    "redact_url",
    "socket_of",
]

from .. import __version__ as CLIENT_VERSION
from ._errors import BadMessage

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


@dataclasses.dataclass(frozen=True, slots=True)
class Unreadable:
    """A message from the server that the client cannot take, and why (``reason``)."""

    reason: str


def decode_incoming(data: bytes | memoryview) -> list[Envelope | Unreadable]:
    """One frame from the server as its messages (a batch gives several, each judged on its
    own): an :class:`Envelope` (``params``, ``result`` and ``error`` still raw) or an
    :class:`Unreadable` saying why not. Never raises.

    The server's own validator decides (``runtime.protocol``: :func:`decode_frame`,
    :func:`decode_item`, :func:`classify`), so a peer's message is held to one rule in both
    directions, the bound on nesting included: msgspec follows nesting on the C stack, and
    past the interpreter's recursion limit the JSON is answered as ``TOO_DEEP`` (-32700),
    never a ``RecursionError`` out of the reader."""
    try:
        decoded = decode_frame(data)
    except JSONRPCError as exc:
        return [Unreadable(exc.message)]
    if isinstance(decoded, Envelope):
        return [_judged(decoded)]
    if not decoded:
        return [Unreadable("an empty batch")]
    items: list[Envelope | Unreadable] = []
    for raw in decoded:
        try:
            items.append(_judged(decode_item(raw)))
        except JSONRPCError as exc:
            items.append(Unreadable(exc.message))
    return items


def _judged(envelope: Envelope) -> Envelope | Unreadable:
    try:
        classify(envelope)
    except JSONRPCError as exc:
        return Unreadable(exc.message)
    return envelope


def decode_value(data: Raw | bytes, what: str, type: Any = Any) -> Any:
    """A value the server sent (a result, an error object, params) decoded as ``type``.

    Raises :class:`BadMessage` naming ``what``: for JSON that does not match ``type``, and
    for nesting deeper than the decoder follows (the server's rule, ``TOO_DEEP``: the value
    is decoded deeper in the stack than its envelope was, so its depth is checked again)."""
    try:
        return msgspec.json.decode(data, type=type)
    except RecursionError:
        raise BadMessage(f"{what}: {TOO_DEEP}") from None
    except msgspec.ValidationError as exc:
        raise BadMessage(f"{what}: the result does not match the schema: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BadMessage(f"{what}: {exc}") from None


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
