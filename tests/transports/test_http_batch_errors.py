"""Errors without a usable id (JSON-RPC ``id: null``) are answered on the POST that caused
them, never on the session's GET stream: a POST always gets its answer (no hang, no 202)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from .app import call, init_body, make_app, serving
from .http_client import connect, request
from .test_http_session import open_session

NOTIFY = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def _quiet_standing_stream(address: Any, session_id: str) -> Any:
    """Open the session's GET stream and read its priming event (nothing else may come)."""
    standing = await connect(address)
    await standing.send("GET", "/mcp", headers={"mcp-session-id": session_id})
    assert (await standing.head()).status == 200
    prime = await standing.next_event()
    assert prime is not None and prime.data == ""
    return standing


async def _assert_nothing_on(standing: Any) -> None:
    with trio.move_on_after(0.2) as quiet:
        event = await standing.next_event()
        raise AssertionError(f"unexpected event on the GET stream: {event}")
    assert quiet.cancelled_caught


async def test_empty_batch_gets_400_on_its_post() -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address, "2025-03-26")
            standing = await _quiet_standing_stream(address, session_id)
            response = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=b"[]"
            )
            assert response.status == 400
            assert response.headers["mcp-session-id"] == session_id
            body = response.json()
            assert body["id"] is None and body["error"]["code"] == -32600
            assert "empty batch" in body["error"]["message"]
            await _assert_nothing_on(standing)
            await standing.aclose()


async def test_oversized_batch_gets_400_instead_of_hanging() -> None:
    app, _ = make_app(max_batch_size=2)
    batch = [call(i, "add", a=i, b=i) for i in range(1, 4)]
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address, "2025-03-26")
            standing = await _quiet_standing_stream(address, session_id)
            response = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=batch
            )
            assert response.status == 400
            error = response.json()["error"]
            assert response.json()["id"] is None and error["code"] == -32600
            assert error["data"] == {"maxBatchSize": 2}
            await _assert_nothing_on(standing)
            # A batch at the limit is served.
            ok = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=batch[:2]
            )
            assert ok.status == 200 and sorted(r["id"] for r in ok.json()) == [1, 2]
            await standing.aclose()


async def test_invalid_items_are_answered_with_their_batch() -> None:
    app, _ = make_app()
    batch = [
        5,
        call(1, "add", a=1, b=2),
        {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
        {"jsonrpc": "1.0", "id": 9, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/x"},
    ]
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address, "2025-03-26")
            standing = await _quiet_standing_stream(address, session_id)
            response = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=batch
            )
            assert response.status == 200
            replies = response.json()
            assert len(replies) == 4
            ok = [r for r in replies if r["id"] == 1]
            assert ok[0]["result"]["content"][0]["text"] == "3"
            errors = sorted((str(r["id"]), r["error"]["code"]) for r in replies if "error" in r)
            assert errors == [("9", -32600), ("None", -32600), ("None", -32600)]
            await _assert_nothing_on(standing)
            await standing.aclose()


async def test_batch_of_only_invalid_items_gets_400_with_every_error() -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address, "2025-03-26")
            response = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=[1, {"x": 2}]
            )
            assert response.status == 400
            assert [r["error"]["code"] for r in response.json()] == [-32600, -32600]
            assert all(r["id"] is None for r in response.json())


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1},  # no method, no result: neither request nor response
        {"jsonrpc": "2.0", "id": None, "method": "tools/list"},  # MCP: id must not be null
        {"jsonrpc": "2.0", "method": "notifications/x", "params": 5},  # scalar params
        {"jsonrpc": "2.0", "id": True, "method": "tools/list"},  # a boolean id
        {"jsonrpc": "1.0", "id": 4, "method": "tools/list"},
    ],
    ids=["no-method", "null-id", "scalar-params", "bool-id", "wrong-version"],
)
async def test_invalid_message_in_a_session_gets_400_on_its_post(message: Any) -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address)
            standing = await _quiet_standing_stream(address, session_id)
            response = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=message
            )
            assert response.status == 400
            assert response.json()["error"]["code"] == -32600
            await _assert_nothing_on(standing)
            await standing.aclose()


async def test_parse_error_in_a_session_gets_400() -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address, "2025-03-26")
            response = await request(
                address, "POST", headers={"mcp-session-id": session_id}, body=b"[{oops"
            )
            assert response.status == 400
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": response.json()["error"]["message"]},
            }


async def test_initialize_with_null_id_gets_400_and_no_session() -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            response = await request(address, "POST", body=init_body(request_id=None))
            assert response.status == 400
            assert "mcp-session-id" not in response.headers
            assert response.json()["error"]["code"] == -32600
