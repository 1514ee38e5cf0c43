"""runtime.client's RequestBuilder: the bytes of each request and notification the client
sends, in both eras, built without trio or a server."""

from __future__ import annotations

from typing import Any

import msgspec

from runtime.client._outgoing import (
    REPEATABLE_METHODS,
    Outgoing,
    RequestBuilder,
    cancellation,
)
from runtime.protocol import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    Implementation,
    Tool,
)


def _builder(**capabilities: Any) -> RequestBuilder:
    return RequestBuilder(Implementation("c", "1.0"), dict(capabilities), tasks=True)


def _decoded(data: bytes) -> dict[str, Any]:
    decoded: dict[str, Any] = msgspec.json.decode(data)
    return decoded


def test_a_handshake_era_request_carries_only_what_the_caller_gave() -> None:
    builder = _builder()
    out = builder.request(4, "tools/list", None, modern=False)
    assert out.data == b'{"jsonrpc":"2.0","id":4,"method":"tools/list"}'
    assert out.method == "tools/list" and out.request_id == 4 and out.expects_response
    assert out.repeatable and not out.modern and out.name is None and not out.headers
    out = builder.request(5, "tools/list", {"cursor": "c2"}, modern=False)
    assert out.data == b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"c2"}}'


def test_a_modern_request_names_the_revision_capabilities_and_client_in_meta() -> None:
    builder = _builder(sampling={})
    builder.log_level = "debug"
    params = {"name": "add", "arguments": {"a": 1}, "_meta": {"mine": 1}}
    out = builder.request(9, "tools/call", params, modern=True)
    body = _decoded(out.data)
    assert list(body) == ["jsonrpc", "id", "method", "params"]
    meta = body["params"]["_meta"]
    assert meta == {
        "mine": 1,  # what the caller gave is kept
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {
            "sampling": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
        META_CLIENT_INFO: {"name": "c", "version": "1.0"},
        META_LOG_LEVEL: "debug",
    }
    assert params["_meta"] == {"mine": 1}  # the caller's params are not changed
    assert out.modern and out.name == "add" and not out.repeatable
    # Without the tasks extension, capabilities are the handlers' alone.
    plain = RequestBuilder(Implementation("c"), {}, tasks=False)
    meta = _decoded(plain.request(1, "tools/list", None, modern=True).data)["params"]["_meta"]
    assert meta[META_CLIENT_CAPABILITIES] == {} and META_LOG_LEVEL not in meta


def test_a_request_with_progress_carries_its_token() -> None:
    out = _builder().request(12, "tools/call", {"name": "slow"}, modern=False, progress=True)
    assert out.data == (
        b'{"jsonrpc":"2.0","id":12,"method":"tools/call",'
        b'"params":{"name":"slow","_meta":{"progressToken":"progress-12"}}}'
    )


def test_repeatable_follows_the_method_unless_the_caller_says() -> None:
    builder = _builder()
    assert builder.request(1, "resources/read", {"uri": "a://b"}, modern=False).repeatable
    assert not builder.request(2, "tools/call", {"name": "x"}, modern=False).repeatable
    assert builder.request(3, "tools/call", {"name": "x"}, modern=False, repeatable=True).repeatable
    assert "tools/call" not in REPEATABLE_METHODS and "subscriptions/listen" in REPEATABLE_METHODS


def test_the_name_a_method_carries_is_the_mcp_name_header_value() -> None:
    builder = _builder()
    assert builder.request(1, "resources/read", {"uri": "a://b"}, modern=True).name == "a://b"
    assert builder.request(2, "tasks/get", {"taskId": "t1"}, modern=True).name == "t1"
    assert builder.request(3, "tools/call", {"name": 5}, modern=True).name is None  # not a str


def test_a_modern_tools_call_mirrors_marked_arguments_into_headers() -> None:
    builder = _builder()
    schema = {"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    builder.param_headers.learn([Tool("geo", input_schema=schema)])
    params = {"name": "geo", "arguments": {"region": "eu-west"}}
    assert builder.request(1, "tools/call", params, modern=True).headers == [
        ("Mcp-Param-Region", "eu-west")
    ]
    assert builder.request(2, "tools/call", params, modern=False).headers == []


def test_batch_items_are_requests_without_headers() -> None:
    builder = _builder()
    assert builder.batch_item(1, "ping", None, modern=False) == (
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    )
    item = _decoded(builder.batch_item(2, "tools/list", {"cursor": "x"}, modern=True))
    assert item["params"]["cursor"] == "x"
    assert item["params"]["_meta"][META_PROTOCOL_VERSION] == "2026-07-28"


def test_notifications_and_the_end_of_the_handshake() -> None:
    builder = _builder()
    out = builder.notification("notifications/roots/list_changed", None, modern=False)
    assert out.data == b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'
    assert not out.expects_response and out.request_id is None
    out = builder.notification("notifications/x", {"a": 1}, modern=True)
    assert out.data == b'{"jsonrpc":"2.0","method":"notifications/x","params":{"a":1}}'
    assert out.modern
    initialized = RequestBuilder.initialized()
    assert initialized.data == b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert initialized.method is None  # a handshake-era message: no Mcp-Method header


def test_a_cancellation_names_the_request_and_keeps_its_era() -> None:
    request = Outgoing(b"{}", "tools/call", 7, modern=True, expects_response=True)
    out = cancellation(request, "timeout")
    assert out.data == (
        b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
        b'"params":{"requestId":7,"reason":"timeout"}}'
    )
    assert out.method == "notifications/cancelled" and out.request_id == 7 and out.modern
