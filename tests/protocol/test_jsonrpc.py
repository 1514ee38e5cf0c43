"""The JSON-RPC 2.0 envelope: decode once, classify, encode exactly."""

from __future__ import annotations

import msgspec
import pytest

from runtime.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    JSONRPCError,
    Kind,
    classify,
    decode_frame,
    encode_error,
    encode_notification,
    encode_result,
    error_reply,
    id_key,
    overloaded,
    params_error,
    prepare_error,
    probe,
)


def _classify(frame: bytes) -> Kind:
    message = decode_frame(frame)
    assert not isinstance(message, list)
    return classify(message)


def test_request_keeps_params_raw() -> None:
    message = decode_frame(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"a": [1, 2]}}')
    assert not isinstance(message, list)
    assert classify(message) is Kind.REQUEST
    assert isinstance(message.params, msgspec.Raw)
    assert bytes(message.params) == b'{"a": [1, 2]}'


@pytest.mark.parametrize(
    ("frame", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"m"}', Kind.REQUEST),
        (b'{"jsonrpc":"2.0","id":"x","method":"m","params":[1]}', Kind.REQUEST),
        (b'{"jsonrpc":"2.0","method":"m"}', Kind.NOTIFICATION),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', Kind.RESPONSE),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}', Kind.RESPONSE),
    ],
)
def test_kinds(frame: bytes, kind: Kind) -> None:
    assert _classify(frame) is kind


def test_invalid_json_is_parse_error() -> None:
    with pytest.raises(JSONRPCError) as info:
        decode_frame(b'{"jsonrpc": "2.0", "method"')
    assert info.value.code == PARSE_ERROR


@pytest.mark.parametrize(
    ("frame", "expected_id", "fragment"),
    [
        (b"42", None, "object | array"),
        (b'"str"', None, "object | array"),
        (b'{"jsonrpc":"1.0","id":3,"method":"m"}', 3, '"jsonrpc" must be exactly "2.0"'),
        (b'{"id":3,"method":"m"}', 3, "jsonrpc"),
        (b'{"jsonrpc":"2.0","id":true,"method":"m"}', None, "$.id"),
        (b'{"jsonrpc":"2.0","id":null,"method":"m"}', None, "not null"),
        (b'{"jsonrpc":"2.0","id":4,"method":5}', 4, "$.method"),
        (b'{"jsonrpc":"2.0","id":5,"method":"m","params":3}', 5, "object or an array"),
        (b'{"jsonrpc":"2.0","id":6}', 6, "exactly one"),
        (b'{"jsonrpc":"2.0"}', None, 'missing "method"'),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","result":1}', 1, "cannot carry"),
    ],
)
def test_invalid_requests(frame: bytes, expected_id: object, fragment: str) -> None:
    with pytest.raises(JSONRPCError) as info:
        message = decode_frame(frame)
        assert not isinstance(message, list)
        classify(message)
    assert info.value.code == INVALID_REQUEST
    assert info.value.request_id == expected_id
    assert fragment in info.value.message


def test_batch_is_list_of_raw_items() -> None:
    batch = decode_frame(b'[{"jsonrpc":"2.0","method":"a"}, 42]')
    assert isinstance(batch, list)
    assert [bytes(item) for item in batch] == [b'{"jsonrpc":"2.0","method":"a"}', b"42"]


@pytest.mark.parametrize("request_id", [0, -1, 2**53, "abc", "", "ü", 1.5])
def test_ids_are_echoed_exactly(request_id: object) -> None:
    reply = msgspec.json.decode(encode_result(request_id, {"ok": True}))  # type: ignore[arg-type]
    assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {"ok": True}}
    assert type(reply["id"]) is type(request_id)


def test_result_can_be_preencoded() -> None:
    assert encode_result(1, msgspec.Raw(b'{"x":1}')) == b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}'


def test_error_encoding_omits_absent_data() -> None:
    assert msgspec.json.decode(encode_error(None, -32700, "Parse error")) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }


def test_id_key_separates_number_and_string() -> None:
    assert id_key(1) != id_key("1")


class _Inner(msgspec.Struct):
    name: str


class _Outer(msgspec.Struct):
    inner: _Inner


def test_params_error_names_the_field_path() -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.json.decode(b'{"inner": {"name": 3}}', type=_Outer)
    err = params_error(info.value)
    assert err.code == INVALID_PARAMS
    assert err.data["path"] == "params.inner.name"
    assert "Expected `str`, got `int`" in err.message


@pytest.mark.parametrize(
    "error",
    [
        overloaded("too many requests in flight on this connection", maxInFlight=16),
        JSONRPCError(INVALID_REQUEST, 'with "quotes" and \u00e9', None),
        JSONRPCError(-32000, "nested", {"a": [1, {"b": None}], "c": "x"}),
    ],
)
def test_a_prepared_error_answers_byte_for_byte_as_an_unprepared_one(error: JSONRPCError) -> None:
    plain = JSONRPCError(error.code, error.message, error.data)
    assert plain.encoded is None
    prepared = prepare_error(error)
    assert prepared is error and error.encoded is not None
    for request_id in (1, "1", 2.5, -7, '\u00e9"x'):
        got = error_reply(prepared, request_id)
        assert got == error_reply(plain, request_id)
        assert msgspec.json.decode(got)["id"] == request_id
    # With no id given, both answer the id the error recovered (or null).
    assert error_reply(prepared) == error_reply(plain)
    recovered = prepare_error(JSONRPCError(INVALID_REQUEST, "bad", request_id=9))
    assert error_reply(recovered) == encode_error(9, INVALID_REQUEST, "bad")


def test_probe_of_an_encoded_notification_needs_no_decode_and_agrees_with_one() -> None:
    notes = [
        encode_notification("notifications/resources/updated", {"uri": 'mem://"id":1,'}),
        encode_notification("notifications/tools/list_changed"),
        encode_notification("notifications/progress", {"progressToken": 7, "progress": 1}),
    ]
    for data in notes:
        message = msgspec.json.decode(data)  # what a full decode says
        assert "id" not in message and "method" in message
        assert probe(data) == (False, None)
    # Not notifications: decoded as before.
    assert probe(b'{"jsonrpc":"2.0","id":3,"result":{}}') == (True, 3)
    assert probe(b'{"jsonrpc":"2.0","id":4,"method":"ping"}') == (False, 4)
    assert probe(b'{"jsonrpc":"2.0","method":"sampling/x","id":5}') == (False, 5)
    assert probe(b'[{"jsonrpc":"2.0","id":6,"result":{}}]') == (True, 6)
