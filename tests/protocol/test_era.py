"""runtime.protocol.select_era and the status table: pure functions of a request's shape."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.protocol import (
    INVALID_PARAMS,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONRPCError,
    encode_error,
    encode_result,
    http_status,
    select_era,
    status_of,
)


@pytest.mark.parametrize("meta", [None, {}, {"progressToken": 1}])
def test_without_a_protocol_version_it_is_the_handshake_era(meta: Any) -> None:
    assert select_era(meta) is None


def test_a_modern_request_gives_its_version_and_capabilities() -> None:
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {"x": {}}}
    modern = select_era(meta)
    assert modern is not None
    assert modern.version == "2026-07-28" and modern.capabilities == {"x": {}}


def test_an_unknown_version_is_32022_with_the_supported_list() -> None:
    with pytest.raises(JSONRPCError) as info:
        select_era({META_PROTOCOL_VERSION: "v999", META_CLIENT_CAPABILITIES: {}})
    assert info.value.code == UNSUPPORTED_PROTOCOL_VERSION
    assert info.value.data == {"supported": list(SUPPORTED_VERSIONS), "requested": "v999"}


def test_the_version_is_judged_before_the_capabilities() -> None:
    with pytest.raises(JSONRPCError) as info:
        select_era({META_PROTOCOL_VERSION: "v999"})
    assert info.value.code == UNSUPPORTED_PROTOCOL_VERSION


@pytest.mark.parametrize(
    ("meta", "path"),
    [
        ({META_PROTOCOL_VERSION: 7}, f"params._meta.{META_PROTOCOL_VERSION}"),
        ({META_PROTOCOL_VERSION: "2026-07-28"}, f"params._meta.{META_CLIENT_CAPABILITIES}"),
        (
            {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []},
            f"params._meta.{META_CLIENT_CAPABILITIES}",
        ),
    ],
)
def test_malformed_modern_meta_is_32602_naming_the_key(meta: Any, path: str) -> None:
    with pytest.raises(JSONRPCError) as info:
        select_era(meta)
    assert info.value.code == INVALID_PARAMS and info.value.data == {"path": path}


@pytest.mark.parametrize(
    ("code", "status"),
    [(-32700, 400), (-32600, 400), (-32601, 404), (-32020, 400), (-32021, 400), (-32022, 400)],
)
def test_protocol_errors_have_their_http_status(code: int, status: int) -> None:
    assert http_status(code) == status
    assert status_of(encode_error(1, code, "x")) == status


@pytest.mark.parametrize("code", [-32602, -32603, -32002, -32001, -32010])
def test_handler_errors_are_200(code: int) -> None:
    assert http_status(code) == 200
    assert status_of(encode_error(1, code, "x")) == 200


def test_a_result_mentioning_error_is_200() -> None:
    assert status_of(encode_result(1, {"error": {"code": -32600}})) == 200


def test_an_error_whose_data_mentions_result_keeps_its_status() -> None:
    reply = encode_error(1, -32601, "x", {"result": 1, "text": '"result":'})
    assert status_of(reply) == 404


def test_a_string_id_naming_error_or_result_changes_nothing() -> None:
    assert status_of(encode_result('"error":"result":', {"x": 1})) == 200
    assert status_of(encode_error('"result":', -32600, "x")) == 400
