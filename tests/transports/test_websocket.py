"""MCP over WebSocket: the quickstart's tools, batches, cancellation, close codes, edge checks."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket_url

from runtime.cli import load_target
from runtime.core import Connection

from ..peers import ROOT
from .app import call, init_body, make_app, serving, until


async def _rpc(ws: Any, message: Any) -> Any:
    await ws.send_message(json.dumps(message))
    return json.loads(await ws.get_message())


async def test_quickstart_tools_over_websocket() -> None:
    app = load_target(str(ROOT / "examples" / "quickstart.py"))
    with trio.fail_after(10):
        async with serving(app, "ws") as (host, port):
            url = f"ws://{host}:{port}/mcp"
            async with open_websocket_url(url, subprotocols=["mcp"]) as ws:
                assert ws.subprotocol == "mcp"
                init = await _rpc(ws, init_body())
                assert init["result"]["serverInfo"]["name"] == "quickstart"
                await ws.send_message('{"jsonrpc":"2.0","method":"notifications/initialized"}')
                tools = await _rpc(ws, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                assert [t["name"] for t in tools["result"]["tools"]] == [
                    "add",
                    "countdown",
                    "divide",
                ]
                added = await _rpc(ws, call(3, "add", a=2, b=40))
                assert added["result"]["content"][0]["text"] == "42"
                await ws.send_message(json.dumps(call(4, "countdown", "tok")))
                seen = [json.loads(await ws.get_message()) for _ in range(4)]
                assert [m["params"]["progress"] for m in seen[:3]] == [1, 2, 3]
                assert seen[3]["result"]["content"][0]["text"] == "liftoff"


async def test_batch_with_one_failing_item() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with (
            serving(app, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await _rpc(ws, init_body())
            batch = [
                call(1, "add", a=1, b=2),
                {"jsonrpc": "2.0", "id": 2},
                call(3, "add", a=2, b=2),
            ]
            replies = {r["id"]: r for r in await _rpc(ws, batch)}
            assert replies[1]["result"]["content"][0]["text"] == "3"
            assert replies[3]["result"]["content"][0]["text"] == "4"
            assert replies[2]["error"]["code"] == -32600


async def test_cancellation_over_websocket() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with (
            serving(app, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await _rpc(ws, init_body())
            await ws.send_message(json.dumps(call("s", "slow", tag="ws")))
            await until(lambda: seen["started"])
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "s"},
            }
            await ws.send_message(json.dumps(cancel))
            await until(lambda: seen["cancelled"])
            # No response for the cancelled request; the connection still answers.
            pong = await _rpc(ws, {"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert pong["id"] == "p"


async def test_too_big_message_closes_with_1009() -> None:
    app, _ = make_app(max_frame_size=1024)
    with trio.fail_after(10):
        async with (
            serving(app, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await ws.send_message("x" * 5000)
            with pytest.raises(ConnectionClosed) as closed:
                await ws.get_message()
            assert closed.value.reason.code == 1009


async def test_binary_message_closes_with_1003() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with (
            serving(app, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await ws.send_message(b"{}")
            with pytest.raises(ConnectionClosed) as closed:
                await ws.get_message()
            assert closed.value.reason.code == 1003


async def test_foreign_origin_and_wrong_subprotocol_are_rejected() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, "ws") as (host, port):
            url = f"ws://{host}:{port}/mcp"
            with pytest.raises(ConnectionRejected) as rejected:
                async with open_websocket_url(
                    url, subprotocols=["mcp"], extra_headers=[(b"Origin", b"http://evil.example")]
                ):
                    pass
            assert rejected.value.status_code == 403
            with pytest.raises(ConnectionRejected) as wrong:
                async with open_websocket_url(url, subprotocols=["graphql-ws"]):
                    pass
            assert wrong.value.status_code == 400
            with pytest.raises(ConnectionRejected) as missing:
                async with open_websocket_url(f"ws://{host}:{port}/other"):
                    pass
            assert missing.value.status_code == 404


async def test_shutdown_finishes_in_flight_then_closes_with_1001() -> None:
    app, _ = make_app(shutdown_grace=5)
    with trio.fail_after(10):
        async with (
            serving(app, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await _rpc(ws, init_body())
            await ws.send_message(json.dumps(call(1, "slow", tag="t", seconds=0.3)))
            await trio.sleep(0.05)
            app.shutdown()
            reply = json.loads(await ws.get_message())
            assert reply["result"]["content"][0]["text"] == "t"
            with pytest.raises(ConnectionClosed) as closed:
                await ws.get_message()
            assert closed.value.reason.code == 1001


async def test_a_closed_websocket_connection_is_let_go() -> None:
    """Once a socket closed and its connection ended, the server keeps nothing of it: the
    connections it watches for shutdown are those serving now, not every one it served."""
    app, _ = make_app()

    def served() -> list[Connection]:
        gc.collect()
        return [
            obj
            for obj in gc.get_objects()
            if isinstance(obj, Connection) and obj.session.transport == "ws"
        ]

    with trio.fail_after(10):
        async with serving(app, "ws") as (host, port):
            for _ in range(3):
                async with open_websocket_url(
                    f"ws://{host}:{port}/mcp", subprotocols=["mcp"]
                ) as ws:
                    assert (await _rpc(ws, init_body()))["id"] == 1
            await until(lambda: all(connection.ended for connection in served()))
            assert served() == []
