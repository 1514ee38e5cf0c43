"""split_params (runtime/protocol/_split_params.py): a request's envelope read from the members
around its ``params``. Whenever it answers and its span is one JSON value, the general decode
of the frame gives the same envelope with the same raw params bytes; every other shape is
declined (None), never misread."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runtime.protocol import Envelope, decode_frame, split_params
from runtime.protocol._split_params import MAX_HEAD, MAX_TAIL


def _fields(env: Envelope) -> tuple[Any, ...]:
    return (env.jsonrpc, env.method, env.id, env.result, env.error)


def _agrees(frame: bytes) -> bool:
    """Whether ``frame`` was split (and its span is one JSON value, as the caller's decode
    proves); when it was, assert it agrees with the general decode."""
    split = split_params(frame)
    for other in (bytearray(frame), memoryview(frame)):  # an HTTP body: the same answer
        found = split_params(other)
        assert (found is None) == (split is None)
        if found is not None and split is not None:
            assert _fields(found[0]) == _fields(split[0]) and found[1] == split[1]
    if split is None:
        return False
    env, span = split
    try:
        msgspec.json.decode(span)
    except msgspec.DecodeError:
        return False  # the caller's decode refuses it: the general reading takes the frame
    general = decode_frame(frame)
    assert isinstance(general, Envelope)
    assert _fields(env) == _fields(general)
    assert env.params is msgspec.UNSET
    assert isinstance(general.params, msgspec.Raw)
    assert bytes(span) == bytes(general.params)
    return True


def test_the_common_shape_is_split_without_a_copy() -> None:
    params = b'{"name":"size","arguments":{"data":"' + b"x" * 100_000 + b'"}}'
    frame = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":' + params + b"}"
    split = split_params(frame)
    assert split is not None
    env, span = split
    assert (env.jsonrpc, env.id, env.method) == ("2.0", 7, "tools/call")
    assert span.obj is frame and bytes(span) == params  # a view of the frame
    assert _agrees(frame)


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","params":{"a":1}}',
        b'{"jsonrpc":"2.0","id":"x","method":"m","params":{}}',
        b'{"id":1,"method":"m","jsonrpc":"2.0","params":{"a":{"b":[1,"}"]}}}',
        # Keys given twice before params: the general decode keeps the last, as the split.
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"m","params":{"a":1}}',
        # An escaped "params" key earlier: the last one (the span) wins in both.
        b'{"jsonrpc":"2.0","id":1,"method":"m","param\\u0073":{"b":2},"params":{"a":1}}',
        # "params" inside a string before the member.
        b'{"jsonrpc":"2.0","id":"\\"params\\":","method":"m","params":{"a":1}}',
        # Members after params (the TypeScript SDK's order), the later of a repeat counting.
        b'{"method":"tools/call","params":{"a":{"b":"}"}},"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","method":"m","params":{"a":1},"id":1}',
        b'{"id":1,"method":"m","params":{"a":1},"jsonrpc":"2.0","id":"x","method":"n"}',
        b'{"method":"m","params":{},"jsonrpc":"1.0","id":null,"result":[1]}',
    ],
)
def test_split_agrees_with_the_general_decode(frame: bytes) -> None:
    assert _agrees(frame)


@pytest.mark.parametrize(
    "frame",
    [
        # params given again, after: the last one counts, so the split declines
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"params":{"b":2}}',
        b'{"method":"m","params":{"a":1},"jsonrpc":"2.0","params":[1],"id":1}',
        # a brace inside the tail's strings, a tail without jsonrpc, a member after params
        # that ends in a brace
        b'{"method":"m","params":{"a":1},"jsonrpc":"2.0","id":"a}b"}',
        b'{"method":"m","params":{"a":1},"id":1}',
        b'{"jsonrpc":"2.0","id":1,"params":{"a":1},"x":{"y":2}}',
        # a trailing comma after params (no JSON; decode_frame answers -32700)
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"}"},}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}, }',
        # whitespace around the member or the value: the general reading
        b'{"jsonrpc":"2.0","id":1,"method":"m", "params":{"a":1}}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params": {"a":1}}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1} }',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}\n',
        # params not an object
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":[{"a":1}]}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":"{}"}',
        # a nested "params" first (the match is not the top-level member)
        b'{"x":{"params":{}},"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}',
        # an escaped quote before "params": the key is a\"params, not params
        b'{"jsonrpc":"2.0","id":1,"method":"m","a\\"params":{"a":1}}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","param\\u0073":{},"a\\"params":{"big":1}}',
        # "params" as a value, a string's end, a bare word
        b'{"jsonrpc":"2.0","id":1,"method":"params","x":"params":{}}',
        b'{"jsonrpc":"2.0","id":1,"method":"m,"params":{"a":1}}',
        # not JSON-RPC or not JSON at all
        b'{"params":{"a":1}}',
        b'{"jsonrpc":2,"id":1,"method":"m","params":{"a":1}}',
        b'{"jsonrpc":"2.0","id":{,"params":{"a":1}}',
        b'[{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}]',
        b'"params":{}}',
        b"",
    ],
)
def test_other_shapes_are_declined(frame: bytes) -> None:
    assert not _agrees(frame)


def test_a_long_head_or_tail_is_declined() -> None:
    pad = b'"pad":"' + b"p" * MAX_HEAD + b'",'
    frame = b'{"jsonrpc":"2.0","id":1,' + pad + b'"method":"m","params":{"a":1}}'
    assert split_params(frame) is None
    assert isinstance(decode_frame(frame), Envelope)
    pad = b',"pad":"' + b"p" * MAX_TAIL + b'"'
    frame = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}' + pad + b"}"
    assert split_params(frame) is None
    assert isinstance(decode_frame(frame), Envelope)


_KEYS = st.sampled_from(
    [
        b'"jsonrpc"',
        b'"id"',
        b'"method"',
        b'"params"',
        b'"param\\u0073"',
        b'"a\\"params"',
        b'"\\\\"',
        b'"x"',
        b'"result"',
    ]
)
_VALUES = st.sampled_from(
    [
        b'"2.0"',
        b"1",
        b'"tools/call"',
        b'"\\"params\\":"',
        b'"params\\\\"',
        b"{}",
        b'{"params":{}}',
        b'{"a":"}"}',
        b"[1,{}]",
        b"null",
        b'"a,"',
        b'"{\\"params\\":{}}"',
    ]
)
_NOISE = st.sampled_from([b"", b" ", b",", b'"', b"\\", b"}", b"{", b'"params":', b":"])


@settings(max_examples=800, deadline=None)
@given(
    members=st.lists(st.tuples(_KEYS, _VALUES), max_size=5),
    params=st.none() | _VALUES,
    later=st.lists(st.tuples(_KEYS, _VALUES), max_size=3),
    version_last=st.booleans(),
    noise=st.lists(st.tuples(st.integers(0, 200), _NOISE), max_size=2),
)
@example(members=[(b'"id"', b"1")], params=b'{"a":"}"}', later=[], version_last=False, noise=[])
@example(
    members=[(b'"param\\u0073"', b"{}"), (b'"a\\"params"', b'{"a":"}"}')],
    params=None,
    later=[],
    version_last=False,
    noise=[],
)
@example(
    members=[(b'"method"', b'"tools/call"')],
    params=b'{"a":"}"}',
    later=[(b'"params"', b"[1,{}]"), (b'"id"', b"1")],
    version_last=True,
    noise=[],
)
@example(  # a trailing comma after params: the tail alone read as "{}" hid it
    members=[(b'"id"', b"1")],
    params=b'{"a":"}"}',
    later=[],
    version_last=False,
    noise=[(42, b",")],
)
def test_any_frame_split_agrees_with_the_general_decode(
    members: list[tuple[bytes, bytes]],
    params: bytes | None,
    later: list[tuple[bytes, bytes]],
    version_last: bool,
    noise: list[tuple[int, bytes]],
) -> None:
    version = [(b'"jsonrpc"', b'"2.0"')]
    first = members if version_last else version + members
    then = later + version if version_last else later
    inner = [key + b":" + value for key, value in first]
    if params is not None:
        inner.append(b'"params":' + params)
    inner += [key + b":" + value for key, value in then]
    frame = b"{" + b",".join(inner) + b"}"
    for at, piece in noise:  # bytes out of place: the split declines or still agrees
        at = min(at, len(frame))
        frame = frame[:at] + piece + frame[at:]
    _agrees(frame)  # asserts agreement whenever it splits
