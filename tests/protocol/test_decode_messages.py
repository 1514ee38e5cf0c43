"""decode_messages: a peer's frame read message by message by the one validator, never
raising; what a client reads its server with."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from runtime.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    TOO_DEEP,
    Envelope,
    JSONRPCError,
    decode_messages,
)


def test_one_message_is_one_envelope_with_its_members_raw() -> None:
    (item,) = decode_messages(b'{"jsonrpc":"2.0","id":3,"result":{"a":[1]}}')
    assert isinstance(item, Envelope) and item.id == 3
    assert bytes(item.result) == b'{"a":[1]}'  # type: ignore[arg-type]
    assert item.method is msgspec.UNSET


def test_a_batch_is_judged_item_by_item() -> None:
    items = decode_messages(
        b'[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},'
        b'{"jsonrpc":"1.0","id":1,"result":{}},'
        b"7,"
        b'{"jsonrpc":"2.0","id":"r","method":"ping"}]'
    )
    assert [type(item) for item in items] == [Envelope, JSONRPCError, JSONRPCError, Envelope]
    bad_version, scalar = items[1], items[2]
    assert isinstance(bad_version, JSONRPCError) and bad_version.code == INVALID_REQUEST
    assert bad_version.message == 'Invalid Request: "jsonrpc" must be exactly "2.0"'
    assert isinstance(scalar, JSONRPCError) and scalar.code == INVALID_REQUEST


def test_what_is_not_a_message_is_one_error() -> None:
    (not_json,) = decode_messages(b'{"jsonrpc":')
    assert isinstance(not_json, JSONRPCError) and not_json.code == PARSE_ERROR
    (empty,) = decode_messages(b"[]")
    assert isinstance(empty, JSONRPCError) and empty.message == "Invalid Request: empty batch"
    (both,) = decode_messages(b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}')
    assert isinstance(both, JSONRPCError) and both.code == INVALID_REQUEST


def test_nesting_past_the_decoder_is_the_too_deep_parse_error() -> None:
    deep = b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    (item,) = decode_messages(deep)
    assert isinstance(item, JSONRPCError) and item.message == TOO_DEEP


@given(st.binary(max_size=200))
def test_any_bytes_give_envelopes_or_errors_and_never_raise(data: bytes) -> None:
    for item in decode_messages(data):
        assert isinstance(item, Envelope | JSONRPCError)
