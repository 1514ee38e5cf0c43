"""A server of big payloads for byte-exact tests (issue 22): blobs on both sides of the
``resources/read`` piece size, a long text with escapes and non-ASCII, and a tool that digests
a big argument. The payloads are deterministic so that a test can compute what must arrive."""

from __future__ import annotations

import hashlib

from runtime import Server
from runtime.features._contents import ENCODE_PIECE, ONE_GO_BLOB

app = Server("big-payloads", "0.0.1")

#: Characters that JSON escapes (quote, backslash, control) or writes as several UTF-8 bytes.
_TEXT_UNIT = 'ab"c\\\u00e9\n\x00\u2028\U0001f600'


def blob(size: int) -> bytes:
    """``size`` bytes, every byte value, a length that is no multiple of 3 when it asks."""
    return (bytes(range(256)) * (size // 256 + 1))[:size]


def text(chars: int) -> str:
    return (_TEXT_UNIT * (chars // len(_TEXT_UNIT) + 1))[:chars]


#: A blob the reply's encode writes as base64 in one go, and one cut into pieces.
BLOB_ONE_GO = ONE_GO_BLOB
BLOB_PIECES = ONE_GO_BLOB + 1
TEXT_PIECES = ENCODE_PIECE + ENCODE_PIECE // 2 + 7


@app.resource("big://blob/one-go", mime_type="application/octet-stream")
async def blob_one_go() -> bytes:
    """A blob of exactly one piece."""
    return blob(BLOB_ONE_GO)


@app.resource("big://blob/pieces", mime_type="application/octet-stream")
async def blob_pieces() -> bytes:
    """A blob of three pieces, the last one byte."""
    return blob(BLOB_PIECES)


@app.resource("big://text/pieces")
async def text_pieces() -> str:
    """A text of two pieces."""
    return text(TEXT_PIECES)


@app.tool
async def digest(data: str) -> str:
    """The length and SHA-256 of ``data`` (as UTF-8)."""
    return f"{len(data)}:{hashlib.sha256(data.encode()).hexdigest()}"
