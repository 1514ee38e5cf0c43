"""A resource function's return value as MCP resource contents (``resources/read``)."""

from __future__ import annotations

import base64
from typing import Any, Final

import msgspec
import trio

from ..protocol import Pieces
from ._types import BlobResourceContents, TextResourceContents

__all__ = ["reply_contents", "to_contents"]

_CONTENTS: Final = (TextResourceContents, BlobResourceContents)
_encoder: Final = msgspec.json.Encoder()
_encode: Final = _encoder.encode
_encode_into: Final = _encoder.encode_into


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


#: A text longer than this (characters) goes into a ``resources/read`` reply encoded this much
#: at a time, with a trio checkpoint between pieces, so that one big read never holds the
#: event loop for long (the aim: no task step over 20 ms, which a 16 MiB text encoded in one
#: go exceeds several times). Shorter ones are encoded with the rest of the reply, in one go,
#: straight into its buffer. 4 MiB, not 1: a piece that size stays a small fraction of the
#: aim, and every piece is one more big temporary (figures: ``benchmarks/README.md``).
ENCODE_PIECE: Final = 4 << 20

#: A blob up to this long (bytes) is written as base64 by the reply's own encode, straight into
#: the reply's buffer: one buffer per read, the blob's base64 and the reply at once, in one
#: step well under the 20 ms aim. A longer blob is encoded BLOB_PIECE at a time
#: (:func:`_base64_string`), which bounds each step but costs a second buffer as big as the
#: reply: at 4 MiB that would take a read's peak memory past 3x the payload, and, past glibc's
#: trim threshold (twice the largest block freed), page faults would cost more CPU than the
#: pieces save (figures: ``benchmarks/README.md``). (Under glibc's default thresholds, which an
#: embedding program keeps; ``mcp-runtime serve`` fixes them, runtime/cli/_heap.py, and the memory
#: bound alone then makes the choice.)
ONE_GO_BLOB: Final = 4 << 20

#: The piece size of a blob over ONE_GO_BLOB, and the size over which a blob's one-go encode
#: gets a step of its own (a checkpoint before it). 768 KiB of bytes is exactly 1 MiB of
#: base64 (about 1 ms): whole base64 quanta, so the pieces' encodings follow each other.
BLOB_PIECE: Final = 3 << 18


class _TextReply(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """Text on its way into a reply, as an already encoded JSON string in pieces (see
    ENCODE_PIECE). Encode-only: the reply's encode splices the pieces in."""

    uri: str
    text: Pieces
    mime_type: str


class _BlobReply(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """A blob on its way into a ``resources/read`` reply: msgspec writes ``bytes`` as base64
    itself, inside the reply's one encode. Building the base64 ``str`` first (what
    :func:`to_contents` gives user code) means a second pass over it to encode and a third to
    decode it as ASCII (figures: ``benchmarks/README.md``). Encode-only: nothing ever decodes it.
    ``blob`` is the bytes, or (past BLOB_PIECE) their base64 already encoded in pieces."""

    uri: str
    blob: Any
    mime_type: str


async def _json_string(value: str) -> Pieces:
    """``value`` as one JSON string, encoded ENCODE_PIECE characters at a time with a
    checkpoint after each piece (so also cancellable between pieces). msgspec writes each
    piece straight into one growing buffer (``encode_into``: no piece temporaries, no join),
    which is handed on as it is (``Pieces``): the reply is encoded around it
    (``runtime.protocol.encode_result_pieces``) and an HTTP transport writes it beside the
    reply's envelope, so that the text is copied once, by its encode, not again by a join and
    by the reply's encode."""
    out = bytearray()
    for start in range(0, len(value), ENCODE_PIECE):
        piece = value[start : start + ENCODE_PIECE]
        end = len(out)
        if not end:
            _encode_into(piece, out, 0)  # '"<text>"'
        else:
            # Written from the previous piece's last character on, so that this piece's
            # opening quote lands there (and its text right after the previous one's): that
            # one character is put back, no bytes move (as _base64_string does).
            last = out[end - 2]
            _encode_into(piece, out, end - 2)
            out[end - 2] = last
        await trio.lowlevel.checkpoint()
    return Pieces([out])


async def _base64_string(value: bytes | bytearray | memoryview) -> msgspec.Raw:
    """``value`` as one JSON string of its base64, BLOB_PIECE bytes at a time with a
    checkpoint after each piece (so also cancellable between pieces). msgspec writes each
    piece's base64 straight into one growing buffer (``encode_into``: no piece temporaries,
    no zero-filling, no join); the pieces are whole base64 quanta (BLOB_PIECE is a multiple
    of 3), so their encodings follow each other exactly."""
    view = memoryview(value)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")  # (a memoryview of wider items: base64 of its bytes)
    out = bytearray()
    for start in range(0, len(view), BLOB_PIECE):
        piece = view[start : start + BLOB_PIECE]
        end = len(out)
        if not end:
            _encode_into(piece, out, 0)  # '"<base64>"'
        else:
            # Written from the previous piece's last character on, so that this piece's
            # opening quote lands there (and its base64 right after the previous one's):
            # that one character is put back, no bytes move.
            last = out[end - 2]
            _encode_into(piece, out, end - 2)
            out[end - 2] = last
        await trio.lowlevel.checkpoint()
    return msgspec.Raw(out)  # (refers to ``out``, no copy; the reply's encode copies it once)


async def reply_contents(uri: str, value: Any, mime_type: str | None) -> list[Any]:
    """:func:`to_contents` for a ``resources/read`` reply: the same bytes on the wire, bytes
    base64-encoded by msgspec in the reply's encode, and long values encoded a piece at a time
    between checkpoints (ENCODE_PIECE, BLOB_PIECE). Cancellation: Cancelled at any of those
    checkpoints."""
    if isinstance(value, bytes | bytearray | memoryview):
        size = memoryview(value).nbytes
        if size > ONE_GO_BLOB:
            blob: Any = await _base64_string(value)
        else:
            blob = value
            if size > BLOB_PIECE:
                # The reply's encode writes its base64 in a step of its own, not in the one
                # that ran the resource function (the 20 ms aim of ENCODE_PIECE).
                await trio.lowlevel.checkpoint()
        return [_BlobReply(uri=uri, blob=blob, mime_type=mime_type or "application/octet-stream")]
    if isinstance(value, str) and len(value) > ENCODE_PIECE:
        text = await _json_string(value)
        return [_TextReply(uri=uri, text=text, mime_type=mime_type or "text/plain")]
    return to_contents(uri, value, mime_type)
