"""Encoded bytes kept as several buffers, in order, instead of one joined ``bytes``.

A long text in a ``resources/read`` reply is encoded a piece at a time, with a checkpoint
between pieces (``runtime.features``: no event-loop step over 20 ms, so that one big read
never stalls the other requests). Joining those pieces into one ``msgspec.Raw`` and then
encoding the reply around it would copy the whole text twice more (benchmarks/README.md,
"Long texts as pieces"). Instead the text stays its pieces (:class:`Pieces`, a value inside
the result), the reply's envelope is encoded around a one-byte mark where the text goes, and
the reply comes out as :class:`Pieces` too: the envelope's bytes before the text, the text's
pieces, the envelope's bytes after it. A transport that writes a vector (``writev``) sends it
as it is; anything else takes :meth:`Pieces.join`, one copy (still one fewer than the join
and the reply's encode would make).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, final

import msgspec

__all__ = ["Pieces", "encode_result_pieces"]

Buffer = bytes | bytearray


@final
class Pieces:
    """Bytes already encoded, as ``parts`` in order (each ``bytes`` or a ``bytearray`` that
    no one changes any more); ``nbytes`` (also ``len()``) is their total length. Inside a
    result: one JSON value (a string, its quotes included); as a reply: the whole response.
    ``join()`` is the bytes one buffer would hold."""

    __slots__ = ("nbytes", "parts")

    def __init__(self, parts: Sequence[Buffer]) -> None:
        self.parts: tuple[Buffer, ...] = tuple(parts)
        self.nbytes = sum(len(part) for part in self.parts)

    def __len__(self) -> int:
        return self.nbytes

    def join(self) -> bytes:
        """The parts as one ``bytes`` (a copy of them all)."""
        return b"".join(self.parts)

    def __repr__(self) -> str:
        return f"<Pieces {len(self.parts)} parts, {self.nbytes} bytes>"


# Where a value's pieces go in the envelope's encoding. JSON as msgspec writes it never holds a
# NUL byte (a string's control characters are escaped, \u0000), so each NUL of the envelope is a
# mark; a msgspec.Raw holding one (not JSON) is caught by the count below.
_MARK: Final = msgspec.Raw(b"\x00")


class _Result(msgspec.Struct):
    jsonrpc: str
    id: Any
    result: Any


def encode_result_pieces(request_id: Any, result: Any, *, vector: bool = True) -> bytes | Pieces:
    """A whole response (as ``encode_result``) for a ``result`` that may hold :class:`Pieces`:
    with ``vector``, the response as Pieces around theirs when it does, else its bytes;
    without, its bytes, each value's pieces copied in by the one encode (a value of one part,
    the usual case, is not joined first). TypeError, as ``msgspec`` gives it, for a value of
    any other type it cannot encode."""
    found: list[Pieces] = []

    def mark(value: Any) -> Any:
        if type(value) is not Pieces:
            raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")
        if not vector:
            parts = value.parts
            return msgspec.Raw(parts[0] if len(parts) == 1 else value.join())
        found.append(value)
        return _MARK

    envelope = msgspec.json.Encoder(enc_hook=mark).encode(_Result("2.0", request_id, result))
    if not found:
        return envelope
    outer = envelope.split(b"\x00")
    if len(outer) != len(found) + 1:
        raise ValueError("a msgspec.Raw in the result holds a NUL byte: it is not JSON")
    parts: list[Buffer] = [outer[0]]
    for value, after in zip(found, outer[1:], strict=True):
        parts.extend(value.parts)
        if after:
            parts.append(after)
    return Pieces(parts)
