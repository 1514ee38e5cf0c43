"""WebSocket pings and shutdown, now timed by one sweep task and one shutdown watcher for all
sockets (issue 22 item 4): a peer that stops answering pings is closed with 1011, one that
answers stays open, and shutdown reaches every socket."""

from __future__ import annotations

import json

import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url
from wsproto.events import CloseConnection, Ping

from runtime.transports import HttpLimits

from .app import init_body, make_app, serving
from .raw_ws import open_raw_websocket


async def test_a_peer_that_does_not_pong_is_closed_with_1011() -> None:
    app, _ = make_app()
    limits = HttpLimits(ws_ping_interval=0.3, ws_ping_timeout=0.4)
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)  # never answers a ping
            started = trio.current_time()
            pings = 0
            while (event := await raw.next_event()) is not None:
                if isinstance(event, Ping):
                    pings += 1
                    continue
                assert isinstance(event, CloseConnection), event
                assert event.code == 1011 and event.reason == "ping timeout", event
                break
            else:
                raise AssertionError("the stream ended without a close frame")
            assert pings == 1
            assert 0.6 < trio.current_time() - started < 2.5


async def test_a_peer_that_pongs_stays_open_and_every_socket_hears_shutdown() -> None:
    app, _ = make_app(shutdown_grace=3.0)
    limits = HttpLimits(ws_ping_interval=0.1, ws_ping_timeout=0.5)
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=limits) as (host, port):
            url = f"ws://{host}:{port}/mcp"
            async with (
                open_websocket_url(url, subprotocols=["mcp"]) as first,
                open_websocket_url(url, subprotocols=["mcp"]) as second,
            ):
                for ws in (first, second):
                    await ws.send_message(json.dumps(init_body()))
                    assert "result" in json.loads(await ws.get_message())
                await trio.sleep(1.0)  # ten ping intervals, each answered by the client
                await first.send_message('{"jsonrpc":"2.0","id":"p","method":"ping"}')
                assert json.loads(await first.get_message()) == {
                    "jsonrpc": "2.0",
                    "id": "p",
                    "result": {},
                }
                app.shutdown()
                # Idle sockets end at once, not when the grace (3 s) runs out.
                for ws in (first, second):
                    with trio.fail_after(1.5), pytest.raises(ConnectionClosed) as closed:
                        await ws.get_message()
                    assert closed.value.reason.code == 1001, closed.value
