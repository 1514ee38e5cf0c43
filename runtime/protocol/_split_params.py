"""A request frame's envelope read without its ``params``: the members around them only.

The general reading (:func:`decode_frame`) keeps ``params`` raw, but msgspec still walks
every byte of it to find where it ends: for a ``tools/call`` with a 1 MiB argument that walk
is about 0.4 ms, a fifth of the server's CPU for the call, and the handler's typed decode
then reads the same bytes again (issue 22 target 2). Clients write ``params`` as the last
member (the official Python SDK, our own client: ``{"jsonrpc":..,"id":..,"method":..,
"params":{..}}``) or followed by a few short members (the official TypeScript SDK:
``{"method":..,"params":{..},"jsonrpc":"2.0","id":1}``). Either way the span of ``params``
is found without reading its bytes: its start by one short search from the front, its end at
the closing brace, or at the last brace before a short tail.

What this gives is only a candidate: :func:`split_params` decodes the members before the span
and after it, and the caller's own decode of the span proves it is one JSON value (a decode
that fails means: read the frame the general way). When all three decode, the frame is the
object of those members and ``"params": <span>`` (a JSON text has one parse), so
:func:`decode_frame` would have produced the same envelope with the same raw ``params`` bytes:
msgspec keeps the last of a repeated key, and so does the merge here (a tail that repeats
``params`` is declined).
"""

from __future__ import annotations

from typing import Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ._jsonrpc import Envelope

__all__ = ["split_params"]

_KEY: Final = b'"params":'
#: The head is decoded with an empty object standing in for ``params``.
_STAND_IN: Final = b'"params":{}}'
_EMPTY: Final = Raw(b"{}")
#: A key's opening quote follows the object's ``{`` or a member's ``,`` (no whitespace:
#: frames with it are read the general way). Any other byte before it (a backslash above
#: all: an escaped quote inside a string) makes the match something else.
_KEY_STARTS: Final = (ord("{"), ord(","))
_OPEN: Final = ord("{")
_CLOSE: Final = ord("}")
_COMMA: Final = ord(",")
#: Beyond this many bytes before ``params`` the frame is not a common shape (a big unknown
#: member first, say): the general reading is as cheap, and the head is not copied.
MAX_HEAD: Final = 4096
#: The members after ``params`` are searched for its end in this many bytes at most.
MAX_TAIL: Final = 1024


class _Members(msgspec.Struct, forbid_unknown_fields=False):
    """The envelope's members on one side of ``params``, each optional here (the merged
    envelope must have ``jsonrpc``); the types are the envelope's."""

    jsonrpc: str | UnsetType = UNSET
    method: str | UnsetType = UNSET
    id: int | str | float | UnsetType | None = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


_members_decoder: Final = msgspec.json.Decoder(_Members)


def split_params(frame: bytes | bytearray | memoryview) -> tuple[Envelope, memoryview] | None:
    """``(envelope, span)`` of ``frame``: its envelope read from the members before and after
    ``"params"`` (``envelope.params`` unset), and that member's value bytes (a view of
    ``frame``, no copy) when they may be one JSON object. None when the frame is not of that
    shape: read it with :func:`decode_frame`, which gives every answer (errors included) as
    always.

    The caller must decode ``span`` completely before it trusts the envelope (see the module
    docstring), and then sets ``envelope.params = Raw(span)``.
    """
    # (An HTTP body may be a view of the connection's buffer: searched in a copy of its head.)
    head = frame if isinstance(frame, bytes) else bytes(frame[:MAX_HEAD])
    at = head.find(_KEY, 0, MAX_HEAD)
    size = len(frame)
    start = at + len(_KEY)
    if (
        at < 1
        or head[at - 1] not in _KEY_STARTS
        or size - start < 3
        or frame[start] != _OPEN
        or frame[-1] != _CLOSE
    ):
        return None
    after: _Members | None = None
    if frame[-2] == _CLOSE:
        end = size - 1  # params last
    else:
        # Members after params: its end is the last brace before them.
        low = max(start, size - 1 - MAX_TAIL)
        end = bytes(frame[low : size - 1]).rfind(b"}") + 1
        if end == 0 or frame[low + end] != _COMMA:
            return None
        end += low
    try:
        before = _members_decoder.decode(head[:at] + _STAND_IN)
        if end != size - 1:
            after = _members_decoder.decode(b"{" + bytes(frame[end + 1 :]))
    except (msgspec.DecodeError, RecursionError):  # ValidationError included
        return None
    # The stand-in is the top-level ``params`` (the object closed right after it) and the
    # last one of the head; a match that was not the key itself leaves another value there.
    if before.params != _EMPTY:
        return None
    if after is not None:
        if after.params is not UNSET:
            return None  # params again after the span: the last one counts
        # The later of a repeated member counts (msgspec's rule in decode_frame).
        for name in _Members.__struct_fields__:
            value = getattr(after, name)
            if value is not UNSET:
                setattr(before, name, value)
    jsonrpc = before.jsonrpc
    if jsonrpc is UNSET:
        return None  # not a JSON-RPC message: decode_frame says so
    envelope = Envelope(jsonrpc, before.method, before.id, UNSET, before.result, before.error)
    return envelope, memoryview(frame)[start:end]
