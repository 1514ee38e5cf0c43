"""A request frame's envelope read without its ``params``: the members around them only.

The general reading (:func:`decode_frame`) keeps ``params`` raw, but msgspec still walks
every byte of it to find where it ends, a large share of the server's work for a
``tools/call`` with a 1 MiB argument (benchmarks/README.md, "Params read once"), and the
handler's typed decode then reads the same bytes again. Clients write ``params`` as the last
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

__all__ = ["split_batch_params", "split_params"]

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
_items_decoder: Final = msgspec.json.Decoder(list[Raw])
_OPEN_LIST: Final = ord("[")
_CLOSE_LIST: Final = ord("]")
_BETWEEN: Final = frozenset(b" \t\r\n,")
#: The ``"params":`` keys in a batch's head tried as the start of the big item's params, the
#: last first (the keys of the items before it come first; one inside its params later).
MAX_TRIES: Final = 8


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
    if frame[-2] == _CLOSE:
        end = size - 1  # params last
    else:
        # Members after params: its end is the last brace before them.
        low = max(start, size - 1 - MAX_TAIL)
        end = bytes(frame[low : size - 1]).rfind(b"}") + 1
        if end == 0 or frame[low + end] != _COMMA:
            return None
        end += low
        # A member must follow that comma: "{..,"params":{..},}" has a trailing comma, which
        # the tail read as "{" + "}" alone would hide (decode_frame refuses it: -32700).
        if not bytes(frame[end + 1 :]).lstrip().startswith(b'"'):
            return None
    after = None if end == size - 1 else b"{" + bytes(frame[end + 1 :])
    envelope = _around(head[:at], after)
    if envelope is None:
        return None
    return envelope, memoryview(frame)[start:end]


def _around(before: bytes, after: bytes | None) -> Envelope | None:
    """The envelope of an object whose members are ``before`` (its bytes up to the
    ``"params":`` key, from its ``{``) and ``after`` (the members after the value of
    ``params`` as an object of their own, or None: params was last), with ``params`` unset;
    None when these are not such members, or ``params`` is not the member that counts."""
    try:
        head = _members_decoder.decode(before + _STAND_IN)
        tail = None if after is None else _members_decoder.decode(after)
    except (msgspec.DecodeError, RecursionError):  # ValidationError included
        return None
    # The stand-in is the top-level ``params`` (the object closed right after it) and the
    # last one of the head; a match that was not the key itself leaves another value there.
    if head.params != _EMPTY:
        return None
    if tail is not None:
        if tail.params is not UNSET:
            return None  # params again after the span: the last one counts
        # The later of a repeated member counts (msgspec's rule in decode_frame).
        for name in _Members.__struct_fields__:
            value = getattr(tail, name)
            if value is not UNSET:
                setattr(head, name, value)
    jsonrpc = head.jsonrpc
    if jsonrpc is UNSET:
        return None  # not a JSON-RPC message: decode_frame says so
    return Envelope(jsonrpc, head.method, head.id, UNSET, head.result, head.error)


def split_batch_params(
    frame: bytes | bytearray | memoryview,
) -> tuple[list[Raw], int, Envelope, memoryview] | None:
    """``(items, index, envelope, span)`` of a batch ``frame`` (JSON-RPC 2.0 section 6) one
    of whose items holds nearly all of its bytes in its ``params`` (a big ``tools/call``
    among small requests): the batch's items as :func:`decode_frame` gives them but for
    ``items[index]``, whose ``params`` are ``{}``; that item's envelope (``params`` unset);
    and its ``params`` bytes, a view of ``frame``. None when the frame is not of that shape:
    read it with :func:`decode_frame`.

    Found as in :func:`split_params`, without reading the span: its end is the first brace
    in the last ``MAX_TAIL`` bytes after which the rest reads as the end of an item and of
    the batch; its start a ``"params":`` key in the first ``MAX_HEAD`` bytes. The batch with
    ``{}`` standing in for the span is decoded whole (it is small), and the item holding the
    stand-in must have it as its own ``params`` (:func:`_around`). As there, the caller must
    decode ``span`` completely before it trusts any of it: then the frame is that batch with
    the span in place of the stand-in (a JSON text has one parse).
    """
    size = len(frame)
    if size < 4 or frame[0] != _OPEN_LIST or frame[-1] != _CLOSE_LIST:
        return None
    low = max(1, size - 1 - MAX_TAIL)
    tail = bytes(frame[low:])
    end = -1
    brace = tail.find(b"}")
    while brace != -1:
        follows = tail[brace + 1]  # (the tail ends with "]": there is a next byte)
        if follows in (_CLOSE, _COMMA):
            rest = tail[brace + 1 :] if follows == _CLOSE else tail[brace + 2 :]
            try:
                _items_decoder.decode(b"[{" + rest)
            except (msgspec.DecodeError, RecursionError):
                pass
            else:
                end = low + brace + 1
                break
        brace = tail.find(b"}", brace + 1)
    if end == -1:
        return None
    head = frame if isinstance(frame, bytes) else bytes(frame[:MAX_HEAD])
    rest = tail[end - low :]
    at = head.rfind(_KEY, 0, min(MAX_HEAD, end))
    for _ in range(MAX_TRIES):
        if at < 1:
            return None
        start = at + len(_KEY)
        if head[at - 1] in _KEY_STARTS and frame[start] == _OPEN:
            found = _stand_in(head[:start], rest)
            if found is not None:
                items, index, envelope = found
                return items, index, envelope, memoryview(frame)[start:end]
        at = head.rfind(_KEY, 0, at)
    return None


def _stand_in(before: bytes, after: bytes) -> tuple[list[Raw], int, Envelope] | None:
    """The batch ``before + b"{}" + after`` (``before`` ends with a ``"params":`` key):
    its items, the index of the item holding the ``{}`` and that item's envelope, when the
    ``{}`` is its ``params`` (else None)."""
    batch = before + b"{}" + after
    try:
        items = _items_decoder.decode(batch)
    except (msgspec.DecodeError, RecursionError):
        return None
    start = len(before)
    at = 1
    for index, item in enumerate(items):
        # Between items (and before the first): whitespace and one comma only.
        while batch[at] in _BETWEEN:
            at += 1
        offset = at
        at += len(item)
        if at > start:
            if offset > start - len(_KEY) or at < start + 3:
                return None  # the stand-in is not inside this item's members
            members = batch[start + 2 : at]  # "}" or ',<members>}'
            if members == b"}":
                envelope = _around(batch[offset : start - len(_KEY)], None)
            elif members[:1] == b",":
                envelope = _around(batch[offset : start - len(_KEY)], b"{" + members[1:])
            else:
                return None
            return None if envelope is None else (items, index, envelope)
    return None
