"""Every error reply the runtime encodes is an ``ErrorReply`` (its type tells a transport it
is an error without a reading of its bytes); results are plain bytes."""

from __future__ import annotations

import msgspec

from runtime.protocol import (
    ErrorReply,
    JSONRPCError,
    encode_error,
    encode_result,
    error_reply,
    prepare_error,
)


def test_error_builders_return_error_replies_with_the_same_bytes() -> None:
    plain = error_reply(JSONRPCError(-32601, "Method not found: x"), 7)
    prepared = error_reply(prepare_error(JSONRPCError(-32010, "busy", {"limit": 1})), "a")
    direct = encode_error(None, -32700, "Parse error")
    for reply in (plain, prepared, direct):
        assert type(reply) is ErrorReply
    assert (
        plain == b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: x"}}'
    )
    assert msgspec.json.decode(prepared) == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32010, "message": "busy", "data": {"limit": 1}},
    }
    assert direct == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'


def test_results_are_plain_bytes() -> None:
    assert type(encode_result(1, {"error": {"code": -32601}})) is bytes
