"""Streamable HTTP, modern era (2026-07-28): one POST per message, header rules, statuses."""

from __future__ import annotations

import base64

import trio

from .app import MODERN, make_app, modern, modern_headers, serving, until
from .http_client import connect, request, sse_messages


def _tool_call(request_id: int, name: str, progress: object = None, **arguments: object) -> dict:
    params: dict = {"name": name, "arguments": arguments}
    if progress is not None:
        params["_meta"] = {"progressToken": progress}
    return modern(request_id, "tools/call", params)


async def test_request_is_answered_as_json() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "add"),
                body=_tool_call(1, "add", a=2, b=3),
            )
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            assert "mcp-session-id" not in response.headers
            assert response.json()["result"]["content"][0]["text"] == "5"


async def test_progress_is_streamed_as_sse_without_buffering() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "countdown"),
                body=_tool_call(2, "countdown", "tok"),
            )
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["x-accel-buffering"] == "no"
            messages = sse_messages(response.body)
            assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
            assert messages[-1]["id"] == 2


async def test_array_body_gets_400() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            body = [modern(1, "tools/list"), modern(2, "tools/list")]
            response = await request(
                address, "POST", headers=modern_headers("tools/list"), body=body
            )
            assert response.status == 400
            assert response.json()["error"]["code"] == -32600


async def test_notification_gets_202() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            note = modern(None, "notifications/whatever")
            del note["id"]
            response = await request(address, "POST", headers=modern_headers("x"), body=note)
            assert response.status == 202 and response.body == b""


async def test_protocol_version_header_must_match_meta() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            headers = modern_headers("tools/list", **{"mcp-protocol-version": "2025-11-25"})
            response = await request(address, "POST", headers=headers, body=modern(1, "tools/list"))
            assert response.status == 400
            assert response.json()["error"]["code"] == -32020
            assert response.json()["id"] == 1


async def test_mcp_method_must_match_body() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address,
                "POST",
                headers=modern_headers("prompts/list"),
                body=modern(1, "tools/list"),
            )
            assert response.status == 400 and response.json()["error"]["code"] == -32020
            missing = await request(
                address,
                "POST",
                headers={"mcp-protocol-version": MODERN},
                body=modern(2, "tools/list"),
            )
            assert missing.status == 400 and missing.json()["error"]["code"] == -32020


async def test_mcp_name_must_match_body_after_base64_decoding() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            wrong = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "divide"),
                body=_tool_call(1, "add", a=1, b=1),
            )
            assert wrong.status == 400 and wrong.json()["error"]["code"] == -32020
            encoded = "=?base64?" + base64.b64encode(b"add").decode() + "?="
            ok = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", encoded),
                body=_tool_call(2, "add", a=1, b=1),
            )
            assert ok.status == 200


async def test_mcp_param_headers_are_validated_against_the_body() -> None:
    app, _ = make_app()
    body = _tool_call(1, "run_query", region="us-west1", query="select 1")
    with trio.fail_after(10):
        async with serving(app) as address:
            base = modern_headers("tools/call", "run_query")
            missing = await request(address, "POST", headers=base, body=body)
            assert missing.status == 400 and missing.json()["error"]["code"] == -32020
            wrong = await request(
                address, "POST", headers={**base, "mcp-param-region": "eu-west1"}, body=body
            )
            assert wrong.status == 400 and wrong.json()["error"]["code"] == -32020
            ok = await request(
                address, "POST", headers={**base, "mcp-param-region": "us-west1"}, body=body
            )
            assert ok.status == 200
            assert ok.json()["result"]["content"][0]["text"] == "us-west1:select 1"


async def test_header_rules_hold_off_the_direct_path_too() -> None:
    """A request that streams (a progress token, SSE accepted) and a notification take the
    general path, not the direct one: the same header rules apply there."""
    app, _ = make_app()
    sse = {"accept": "application/json, text/event-stream"}
    with trio.fail_after(10):
        async with serving(app) as address:
            body = _tool_call(1, "run_query", "tok", region="us-west1", query="q")
            base = {**modern_headers("tools/call", "run_query"), **sse}
            missing = await request(address, "POST", headers=base, body=body)
            assert missing.status == 400 and missing.json()["error"]["code"] == -32020
            assert "Mcp-Param-region" in missing.json()["error"]["message"]
            wrong_name = {**base, "mcp-name": "add", "mcp-param-region": "us-west1"}
            wrong = await request(address, "POST", headers=wrong_name, body=body)
            assert wrong.status == 400 and wrong.json()["error"]["code"] == -32020
            ok = await request(
                address, "POST", headers={**base, "mcp-param-region": "us-west1"}, body=body
            )
            assert ok.status == 200  # nothing was streamed before the answer: JSON
            assert ok.json()["result"]["content"][0]["text"] == "us-west1:q"
            note = modern(None, "notifications/whatever")
            del note["id"]
            old = modern_headers("x", **{"mcp-protocol-version": "2025-11-25"})
            refused = await request(address, "POST", headers=old, body=note)
            assert refused.status == 400 and refused.json()["error"]["code"] == -32020


async def test_meta_given_twice_gets_400_with_32602_and_the_connection_lives_on() -> None:
    app, _ = make_app()
    body = (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":5,"_meta":'
        b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}'
    )
    with trio.fail_after(10):
        async with serving(app) as address:
            conn = await connect(address)
            try:
                await conn.send("POST", "/mcp", headers=modern_headers("tools/list"), body=body)
                refused = await conn.response()
                assert refused.status == 400
                assert refused.json()["error"]["code"] == -32602
                assert refused.json()["id"] == 5
                conn.conn.start_next_cycle()  # the same keep-alive connection
                await conn.send(
                    "POST",
                    "/mcp",
                    headers=modern_headers("tools/list"),
                    body=modern(6, "tools/list"),
                )
                listed = await conn.response()
                assert listed.status == 200 and listed.json()["id"] == 6
            finally:
                await conn.aclose()


async def test_unknown_method_gets_404_with_32601() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address, "POST", headers=modern_headers("no/such"), body=modern(1, "no/such")
            )
            assert response.status == 404
            assert response.json()["error"]["code"] == -32601


async def test_a_result_that_mentions_an_error_is_still_200() -> None:
    app, _ = make_app()
    tag = '{"error": {"code": -32601}}, "error"'
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "slow"),
                body=_tool_call(1, "slow", tag=tag, seconds=0),
            )
            assert response.status == 200
            assert response.json()["result"]["content"][0]["text"] == tag


async def test_era_rules_hold_on_the_direct_path() -> None:
    """A modern POST's ``_meta`` reaches era selection as the transport decoded it: the
    capabilities rule and the handshake-only methods still apply."""
    app, _ = make_app()
    no_capabilities = _tool_call(1, "add", a=1, b=2)
    del no_capabilities["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address, "POST", headers=modern_headers("tools/call", "add"), body=no_capabilities
            )
            error = response.json()["error"]
            assert error["code"] == -32602 and "clientCapabilities" in error["message"]
            response = await request(
                address, "POST", headers=modern_headers("ping"), body=modern(2, "ping")
            )
            assert response.status == 404
            assert response.json()["error"]["code"] == -32601


async def test_unsupported_version_gets_400_with_32022() -> None:
    app, _ = make_app()
    body = modern(1, "tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    with trio.fail_after(10):
        async with serving(app) as address:
            headers = modern_headers("tools/list", **{"mcp-protocol-version": "2099-01-01"})
            response = await request(address, "POST", headers=headers, body=body)
            assert response.status == 400
            error = response.json()["error"]
            assert error["code"] == -32022
            assert MODERN in error["data"]["supported"]


async def test_missing_meta_gets_400_with_32602() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            response = await request(
                address, "POST", headers=modern_headers("tools/list"), body=body
            )
            assert response.status == 400
            assert response.json()["error"]["code"] == -32602


async def test_get_and_delete_get_405() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            for method in ("GET", "DELETE"):
                response = await request(address, method, headers=modern_headers("x"))
                assert response.status == 405


async def test_closing_the_sse_stream_cancels_the_request() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app, http_limits=None) as address:
            conn = await connect(address)
            await conn.send(
                "POST",
                "/mcp",
                headers=modern_headers("tools/call", "slow"),
                body=_tool_call(1, "slow", "tok", tag="bye"),
            )
            await until(lambda: seen["started"])
            await conn.aclose()
            await until(lambda: seen["cancelled"])
            assert seen["cancelled"] == ["bye"] and not seen["finished"]


def test_status_of_reads_the_first_member_after_the_id() -> None:
    from runtime.protocol import encode_error, encode_result, status_of

    # A result whose content mentions "error" anywhere is still a result.
    assert status_of(encode_result(1, {"text": '"error": {"code": -32601}'})) == 200
    assert status_of(encode_result('id "error":', {"error": {"code": -32601}})) == 200
    # An error is mapped, even when its data holds a "result" member or its id the word.
    assert status_of(encode_error(1, -32601, "Method not found", {"result": 1})) == 404
    assert status_of(encode_error('"result":', -32020, "Header mismatch")) == 400
    assert status_of(encode_error(2, -32602, "Invalid params")) == 200
    # Not a response object at all.
    assert status_of(b"[]") == 200
