"""split_batch_params (runtime/protocol/_split_params.py): a big request inside a batch read
from the bytes around its ``params``. Whenever it answers and its span is one JSON value, the
general decode of the batch gives the same items, and that item the same envelope with the
same raw params bytes; every other shape is declined (None), never misread."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.protocol import Envelope, decode_frame, decode_item, split_batch_params
from runtime.protocol._split_params import MAX_HEAD, MAX_TAIL

BIG = b'{"name":"size","arguments":{"data":"' + b"x}," * 30_000 + b'"}}'


def _fields(env: Envelope) -> tuple[Any, ...]:
    return (env.jsonrpc, env.method, env.id, env.result, env.error)


def _agrees(frame: bytes) -> int | None:
    """The index of the item split out of ``frame`` (when its span is one JSON value, as
    the caller's decode proves), asserting that it agrees with the general decode; None
    when declined."""
    split = split_batch_params(frame)
    for other in (bytearray(frame), memoryview(frame)):  # an HTTP body: the same answer
        found = split_batch_params(other)
        assert (found is None) == (split is None)
        if found is not None and split is not None:
            assert found[1] == split[1] and bytes(found[3]) == bytes(split[3])
    if split is None:
        return None
    items, index, env, span = split
    try:
        msgspec.json.decode(span)
    except msgspec.DecodeError:
        return None  # the caller's decode refuses it: the general reading takes the frame
    general = decode_frame(frame)
    assert isinstance(general, list) and len(general) == len(items)
    for at, (item, whole) in enumerate(zip(items, general, strict=True)):
        if at != index:
            assert bytes(item) == bytes(whole)
    whole_env = decode_item(general[index])
    assert _fields(env) == _fields(whole_env)
    assert env.params is msgspec.UNSET
    assert isinstance(whole_env.params, msgspec.Raw)
    assert bytes(span) == bytes(whole_env.params)
    return index


def _req(request_id: bytes, params: bytes) -> bytes:
    head = b'{"jsonrpc":"2.0","id":' + request_id
    return head + b',"method":"tools/call","params":' + params + b"}"


def test_a_big_call_among_small_items_is_split_without_a_copy() -> None:
    small = _req(b"1", b'{"name":"nothing"}')
    for items, index in (
        ([_req(b"9", BIG)], 0),
        ([small, _req(b"9", BIG)], 1),
        ([_req(b"9", BIG), small, b'{"jsonrpc":"2.0","method":"n","params":{}}'], 0),
        ([small, small, _req(b"9", BIG), small], 2),
        # items that are not requests beside it (each gets its own error)
        ([b"[1]", _req(b"9", BIG), b'"x"', b"{}"], 1),
        # members after params (the official TypeScript SDK's order), whitespace between
        ([small, b'{"method":"tools/call","params":' + BIG + b',"jsonrpc":"2.0","id":9}'], 1),
    ):
        for sep in (b",", b" ,\n "):
            frame = b"[" + sep.join(items) + b"]"
            split = split_batch_params(frame)
            assert split is not None, frame[:80]
            assert split[3].obj is frame and bytes(split[3]) == BIG  # a view of the frame
            assert (split[2].id, split[2].method) == (9, "tools/call")
            assert _agrees(frame) == index


@pytest.mark.parametrize(
    "frame",
    [
        # not a batch, an empty batch, whitespace around it
        _req(b"1", BIG),
        b"[]",
        b" [" + _req(b"1", BIG) + b"]",
        b"[" + _req(b"1", BIG) + b"] ",
        # params given twice in the big item: the last one counts
        b'[{"jsonrpc":"2.0","id":1,"method":"m","params":' + BIG + b',"params":{}}]',
        b'[{"jsonrpc":"2.0","id":1,"params":{},"method":"m","params":' + BIG + b',"params":{}}]',
        # the big "params" nested in another member
        b'[{"jsonrpc":"2.0","id":1,"method":"m","x":{"params":' + BIG + b"}}]",
        # params not an object, broken JSON after it
        b'[{"jsonrpc":"2.0","id":1,"method":"m","params":[' + BIG + b"]}]",
        b"[" + _req(b"1", BIG) + b",{]",
        # two big items (the second one's params are not within the tail)
        b"[" + _req(b"1", BIG) + b"," + _req(b"2", BIG) + b"]",
        # not JSON-RPC
        b'[{"id":1,"method":"m","params":' + BIG + b"}]",
    ],
)
def test_other_shapes_are_declined(frame: bytes) -> None:
    assert _agrees(frame) is None


def test_a_long_head_or_tail_is_declined() -> None:
    pad = b'{"jsonrpc":"2.0","method":"n","params":{"p":"' + b"p" * MAX_HEAD + b'"}}'
    frame = b"[" + pad + b"," + _req(b"1", BIG) + b"]"
    # (Only the small item's params key is in the head: its span runs on into the big item,
    # which the caller's decode refuses after that item's few bytes.)
    assert _agrees(frame) is None
    pad = b'{"jsonrpc":"2.0","method":"n","params":{"p":"' + b"p" * MAX_TAIL + b'"}}'
    frame = b"[" + _req(b"1", BIG) + b"," + pad + b"]"
    assert _agrees(frame) is None  # (likewise: a span that ends in the small item)
    assert isinstance(decode_frame(frame), list)


_KEYS = st.sampled_from(
    [b'"jsonrpc"', b'"id"', b'"method"', b'"params"', b'"param\\u0073"', b'"a\\"params"', b'"x"']
)
_VALUES = st.sampled_from(
    [
        b'"2.0"',
        b"1",
        b'"tools/call"',
        b'"\\"params\\":"',
        b"{}",
        b'{"params":{}}',
        b'{"a":"}"}',
        b'{"a":"}},{"}',
        b"[1,{}]",
        b"null",
        b'"a,"',
        b'"]"',
    ]
)
_NOISE = st.sampled_from(
    [b"", b" ", b",", b'"', b"\\", b"}", b"{", b"[", b"]", b'"params":', b":", b"},{"]
)
_ITEM = st.lists(st.tuples(_KEYS, _VALUES), max_size=4)


def _item(members: list[tuple[bytes, bytes]]) -> bytes:
    return b"{" + b",".join(key + b":" + value for key, value in members) + b"}"


@settings(max_examples=600, deadline=None)
@given(
    before=st.lists(_ITEM, max_size=3),
    members=_ITEM,
    later=_ITEM,
    after=st.lists(_ITEM, max_size=3),
    noise=st.lists(st.tuples(st.integers(0, 400), _NOISE), max_size=2),
    from_end=st.booleans(),
)
@example(before=[], members=[], later=[], after=[], noise=[], from_end=False)
@example(
    before=[[(b'"params"', b'{"a":"}},{"}')]],
    members=[(b'"id"', b"1")],
    later=[(b'"x"', b'{"a":"}},{"}')],
    after=[[(b'"params"', b"{}")]],
    noise=[],
    from_end=False,
)
def test_any_batch_split_agrees_with_the_general_decode(
    before: list[list[tuple[bytes, bytes]]],
    members: list[tuple[bytes, bytes]],
    later: list[tuple[bytes, bytes]],
    after: list[list[tuple[bytes, bytes]]],
    noise: list[tuple[int, bytes]],
    from_end: bool,
) -> None:
    big = [*members, (b'"jsonrpc"', b'"2.0"'), (b'"params"', BIG), *later]
    items = [_item(item) for item in before] + [_item(big)] + [_item(item) for item in after]
    frame = b"[" + b",".join(items) + b"]"
    for at, piece in noise:  # bytes out of place: the split declines or still agrees
        at = len(frame) - min(at, len(frame)) if from_end else min(at, len(frame))
        frame = frame[:at] + piece + frame[at:]
    _agrees(frame)  # asserts agreement whenever it splits
