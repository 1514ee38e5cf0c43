"""A request frame's envelope read without its ``params``, when ``params`` comes last.

The general reading (:func:`decode_frame`) keeps ``params`` raw, but msgspec still walks
every byte of it to find where it ends: for a ``tools/call`` with a 1 MiB argument that walk
is about 0.4 ms, a fifth of the server's CPU for the call, and the handler's typed decode
then reads the same bytes again (issue 22 target 2). Every client we know writes ``params``
as the last member of a request (``{"jsonrpc":..,"id":..,"method":..,"params":{..}}``: the
official SDKs, our own client), so its span is the frame between ``"params":`` and the
closing brace: found with one short search from the front, without reading the bytes of
``params`` at all.

What this gives is only a candidate: :func:`split_last_params` checks everything about the
frame except that the span is exactly one JSON value, which the caller's own decode of the
span proves (a decode that fails means: read the frame the general way). When it does, the
frame is the head's members plus ``"params": <span>`` and nothing else, so
:func:`decode_frame` would have produced the same envelope with the same raw ``params``
bytes (msgspec keeps the last of repeated keys: the span's params, as here).
"""

from __future__ import annotations

from typing import Final

import msgspec
from msgspec import UNSET, Raw

from ._jsonrpc import Envelope

__all__ = ["split_last_params"]

_KEY: Final = b'"params":'
_CLOSE: Final = b"}}"
#: The head is decoded with an empty object standing in for ``params``.
_STAND_IN: Final = b'"params":{}}'
_EMPTY: Final = b"{}"
#: A key's opening quote follows the object's ``{`` or a member's ``,`` (no whitespace:
#: frames with it are read the general way). Any other byte before it (a backslash above
#: all: an escaped quote inside a string) makes the match something else.
_KEY_STARTS: Final = (ord("{"), ord(","))
_OBJECT: Final = ord("{")
#: Beyond this many bytes before ``params`` the frame is not the common shape (a big
#: unknown member first, say): the general reading is as cheap, and the head is not copied.
MAX_HEAD: Final = 4096

_head_decoder: Final = msgspec.json.Decoder(Envelope)


def split_last_params(frame: bytes | bytearray | memoryview) -> tuple[Envelope, memoryview] | None:
    """``(envelope, span)`` of ``frame``: its envelope read from the bytes before its last
    member ``"params"`` (``envelope.params`` unset), and that member's value bytes (a view
    of ``frame``, no copy) when they may be one JSON object. None when the frame is not of
    that shape: read it with :func:`decode_frame`, which gives every answer (errors
    included) as always.

    The caller must decode ``span`` completely before it trusts the envelope (see the module
    docstring), and then sets ``envelope.params = Raw(span)``.
    """
    # (An HTTP body may be a view of the connection's buffer: searched in a copy of its head.)
    head = frame if isinstance(frame, bytes) else bytes(frame[:MAX_HEAD])
    at = head.find(_KEY, 0, MAX_HEAD)
    if at < 1 or head[at - 1] not in _KEY_STARTS or frame[-2:] != _CLOSE:
        return None
    start = at + len(_KEY)
    if frame[start] != _OBJECT:
        return None
    try:
        envelope = _head_decoder.decode(head[:at] + _STAND_IN)
    except (msgspec.DecodeError, RecursionError):  # ValidationError included
        return None
    # The stand-in is the top-level ``params`` (the object closed right after it) and the
    # last one; a match that was not the key itself leaves ``params`` unset or another's.
    stood_in = envelope.params
    if not isinstance(stood_in, Raw) or stood_in != Raw(_EMPTY):
        return None
    envelope.params = UNSET
    return envelope, memoryview(frame)[start:-1]
