"""Long-lived streams: modern ``subscriptions/listen`` over HTTP, SSE keep-alive comments,
legacy HTTP+SSE shutdown; and the edge limits on slow and surplus clients."""

from __future__ import annotations

import json
import logging
from typing import Any

import h11
import pytest
import trio
from trio_websocket import ConnectionRejected, open_websocket_url

from runtime.transports import HttpLimits

from .app import (
    call,
    init_body,
    make_app,
    modern,
    modern_headers,
    next_notification,
    serving,
    until,
)
from .http_client import connect, request
from .test_http_session import open_session

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


async def test_subscriptions_listen_streams_list_changed_until_the_client_closes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, _ = make_app()
    caplog.set_level(logging.INFO, logger="mcp_runtime.http")
    body = modern(11, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    with trio.fail_after(5):
        async with serving(app) as address:
            conn = await connect(address)
            await conn.send(
                "POST", "/mcp", headers=modern_headers("subscriptions/listen"), body=body
            )
            head = await conn.head()
            assert head.status == 200
            assert head.headers["content-type"] == "text/event-stream"
            assert head.headers["x-accel-buffering"] == "no"
            ack = await next_notification(conn, "notifications/subscriptions/acknowledged")
            assert ack["params"]["_meta"][SUBSCRIPTION_ID] == 11
            assert ack["params"]["notifications"] == {"toolsListChanged": True}

            def extra() -> str:
                return "x"

            app.add_tool(extra)
            changed = await next_notification(conn, "notifications/tools/list_changed")
            assert changed["params"]["_meta"][SUBSCRIPTION_ID] == 11
            await conn.aclose()  # closing the stream cancels the listen
            await until(lambda: "client closed the stream: cancelling" in caplog.text)


async def test_quiet_sse_streams_carry_keep_alive_comments() -> None:
    app, _ = make_app()
    limits = HttpLimits(sse_keepalive=0.05)
    with trio.fail_after(5):
        async with serving(app, http_limits=limits) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            await conn.send("GET", "/mcp", headers={"mcp-session-id": session_id})
            assert (await conn.head()).status == 200
            raw = b""
            while raw.count(b": keep-alive\n\n") < 3:
                event = await conn._event()
                assert isinstance(event, h11.Data)
                raw += event.data
            assert raw.startswith(b"id: ")  # the priming event comes first
            # A request with a slow handler keeps its own SSE stream alive the same way.
            post = await connect(address)
            await post.send(
                "POST",
                "/mcp",
                headers={"mcp-session-id": session_id},
                body=call(2, "countdown", "tok", start=2, delay=0.3),
            )
            assert (await post.head()).headers["content-type"] == "text/event-stream"
            body = b""
            while True:
                event = await post._event()
                if not isinstance(event, h11.Data):
                    break
                body += event.data
            assert b": keep-alive\n\n" in body and b"liftoff" in body
            await post.aclose()
            await conn.aclose()


async def test_legacy_sse_stream_gets_its_final_events_on_shutdown() -> None:
    app, seen = make_app(shutdown_grace=5)
    with trio.fail_after(5):
        async with serving(app, "sse") as address:
            stream = await connect(address)
            await stream.send("GET", "/sse", headers={"accept": "text/event-stream"})
            assert (await stream.head()).status == 200
            endpoint = await stream.next_event()
            assert endpoint is not None and endpoint.event == "endpoint"

            async def post(message: Any) -> None:
                response = await request(address, "POST", endpoint.data, body=message)
                assert response.status == 202

            await post(init_body("2024-11-05"))
            initialized = await stream.next_event()
            assert initialized is not None and json.loads(initialized.data)["id"] == 1
            await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await post(call(2, "slow", tag="s", seconds=0.3))
            await until(lambda: seen["started"])
            app.shutdown()
            rest = await stream.events()  # until the server ends the stream
            assert [json.loads(e.data)["id"] for e in rest] == [2]
            assert json.loads(rest[0].data)["result"]["content"][0]["text"] == "s"
            assert seen["finished"] == ["s"]
            await stream.aclose()


async def test_slowloris_dribbling_headers_is_closed_by_the_head_deadline() -> None:
    # Bytes come every 0.5 s, well inside the 1.3 s header timeout: only a deadline for the
    # whole head (not a per-read timeout) cuts this client off, after its third byte.
    app, _ = make_app()
    limits = HttpLimits(header_timeout=1.3)
    with trio.fail_after(5):
        async with serving(app, http_limits=limits) as address:
            slow = await trio.open_tcp_stream(*address)
            started = trio.current_time()
            sent = 0
            closed_at = None

            async def watch() -> None:
                nonlocal closed_at
                while await slow.receive_some(1000):
                    pass
                closed_at = trio.current_time() - started

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                for byte in b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                    if closed_at is not None:
                        break
                    try:
                        await slow.send_all(bytes([byte]))
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                    sent += 1
                    # Another client is served meanwhile.
                    if sent == 2:
                        assert (await request(address, "POST", body=init_body())).status == 200
                    await trio.sleep(0.5)
            assert closed_at is not None and 1.2 <= closed_at < 2.5
            assert 3 <= sent <= 4
            await slow.aclose()


async def test_websocket_connection_limit_answers_503_before_the_upgrade() -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app, "ws", http_limits=HttpLimits(max_connections=1)) as (host, port):
            url = f"ws://{host}:{port}/mcp"
            async with open_websocket_url(url, subprotocols=["mcp"]) as held:
                await held.send_message(json.dumps(init_body()))
                await held.get_message()
                with pytest.raises(ConnectionRejected) as rejected:
                    async with open_websocket_url(url, subprotocols=["mcp"]):
                        pass  # pragma: no cover
                assert rejected.value.status_code == 503
                headers = {k.decode().lower(): v.decode() for k, v in rejected.value.headers or []}
                assert headers["retry-after"] == "1"
            # The slot is free again.
            async with open_websocket_url(url, subprotocols=["mcp"]) as again:
                await again.send_message(json.dumps(init_body()))
                assert "result" in json.loads(await again.get_message())
