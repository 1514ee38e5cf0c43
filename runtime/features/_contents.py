"""A resource function's return value as MCP resource contents (``resources/read``)."""

from __future__ import annotations

import base64
from typing import Any, Final

import msgspec
import trio

from ._types import BlobResourceContents, TextResourceContents

__all__ = ["reply_contents", "to_contents"]

_CONTENTS: Final = (TextResourceContents, BlobResourceContents)
_encode: Final = msgspec.json.Encoder().encode


def _one(uri: str, value: Any, mime_type: str | None) -> Any:
    if isinstance(value, _CONTENTS):
        return value
    if isinstance(value, str):
        return TextResourceContents(uri=uri, text=value, mime_type=mime_type or "text/plain")
    if isinstance(value, bytes | bytearray | memoryview):
        blob = base64.b64encode(value).decode()
        return BlobResourceContents(
            uri=uri, blob=blob, mime_type=mime_type or "application/octet-stream"
        )
    return TextResourceContents(
        uri=uri, text=_encode(value).decode(), mime_type=mime_type or "application/json"
    )


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[Any]:
    """A resource function's return value as ``contents`` of a read result."""
    if isinstance(value, list) and value and all(isinstance(v, _CONTENTS) for v in value):
        return value
    return [_one(uri, value, mime_type)]


#: A text or blob longer than this (characters or bytes) goes into a ``resources/read`` reply
#: encoded this much at a time, with a trio checkpoint between pieces, so that one big read
#: never holds the event loop for long (issue 22: no task step over 20 ms; a 16 MiB text in one
#: go held it 87 ms on the benchmark machine). Shorter ones are encoded with the rest of the
#: reply, in one go, straight into its buffer (a blob's base64 too): no pieces, no join, and
#: no second copy in the reply's encode. 4 MiB, not 1: a 4 MiB piece encodes in about 4 ms
#: (base64) or 1.6 ms (text), and every piece is one more big temporary: a 4 MiB blob in 1 MiB
#: pieces made 4 + 3 x 5.3 MiB of them per read, more than glibc keeps for reuse, so each read
#: faulted 3,725 fresh pages in again (14.5 MiB; server CPU 1.8x a bare msgspec loop over
#: HTTP). In one go it is the blob and its reply: no page faults once warm, 0.5-0.9x the loop.
ENCODE_PIECE: Final = 4 << 20


class _TextReply(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """Text on its way into a reply, as an already encoded JSON string (see ENCODE_PIECE)."""

    uri: str
    text: msgspec.Raw
    mime_type: str


class _BlobReply(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """A blob on its way into a ``resources/read`` reply: msgspec writes ``bytes`` as base64
    itself, inside the reply's one encode. Building the base64 ``str`` first (what
    :func:`to_contents` gives user code) means a second pass over it to encode and a third to
    decode it as ASCII: a 4 MiB blob cost 108M instructions that way, against 71M for a bare
    msgspec loop (callgrind, benchmarks/_big.py). Encode-only: nothing ever decodes it.
    ``blob`` is the bytes, or (past ENCODE_PIECE) their base64 already encoded in pieces."""

    uri: str
    blob: Any
    mime_type: str


async def _json_string(value: str | bytes | bytearray | memoryview) -> msgspec.Raw:
    """``value`` as one JSON string (bytes as base64), encoded ENCODE_PIECE at a time with a
    checkpoint after each piece (so also cancellable between pieces). Pieces of bytes are
    whole base64 quanta (multiples of 3 bytes), so their encodings join into one."""
    view: str | memoryview
    if isinstance(value, str):
        view, step = value, ENCODE_PIECE
    else:
        view, step = memoryview(value), ENCODE_PIECE // 3 * 3  # slices without copying
    parts: list[bytes | memoryview] = [b'"']
    for start in range(0, len(view), step):
        parts.append(memoryview(_encode(view[start : start + step]))[1:-1])
        await trio.lowlevel.checkpoint()
    parts.append(b'"')
    joined = b"".join(parts)
    # The join is a copy of it all (16 MiB: several ms); the reply's encode and its first
    # write follow, so they get a step of their own (issue 22: no step over 20 ms).
    await trio.lowlevel.checkpoint()
    return msgspec.Raw(joined)


async def reply_contents(uri: str, value: Any, mime_type: str | None) -> list[Any]:
    """:func:`to_contents` for a ``resources/read`` reply: the same bytes on the wire, bytes
    base64-encoded by msgspec in the reply's encode, and long values encoded a piece at a time
    between checkpoints (ENCODE_PIECE). Cancellation: Cancelled at any of those checkpoints."""
    if isinstance(value, bytes | bytearray | memoryview):
        blob = await _json_string(value) if len(value) > ENCODE_PIECE else value
        return [_BlobReply(uri=uri, blob=blob, mime_type=mime_type or "application/octet-stream")]
    if isinstance(value, str) and len(value) > ENCODE_PIECE:
        text = await _json_string(value)
        return [_TextReply(uri=uri, text=text, mime_type=mime_type or "text/plain")]
    return to_contents(uri, value, mime_type)
