"""Refusals made at the edges reach ``Middleware.on_refusal`` with what was refused: the
HTTP parser's and the allow-lists' (real sockets, raw bytes), WebSocket's (upgrade
refusals, -32700 in-band, binary and oversize messages closing the socket, the connection
cap), and a notification refused without any answer on the wire. The shipped Metrics and
RequestLogging count and log each."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
from wsproto.events import BytesMessage, CloseConnection, Ping, Request, TextMessage

from runtime import Server
from runtime.middleware import Metrics, Middleware, RequestLogging
from runtime.protocol import Refusal
from runtime.transports import HttpLimits

from ..transports.app import make_app, serving
from ..transports.raw_ws import RawWebSocket, frame, open_raw_websocket
from ..wire import open_memory_peer


class Seen(Middleware):
    def __init__(self) -> None:
        self.refusals: list[Refusal] = []

    def on_refusal(self, refusal: Refusal) -> None:
        self.refusals.append(refusal)


def observed(**limits: Any) -> tuple[Server, Seen, Metrics]:
    app, _ = make_app(**limits)
    seen, metrics = Seen(), Metrics()
    app.add_middleware(metrics, seen, RequestLogging(logger=logging.getLogger("test.edge")))
    return app, seen, metrics


async def raw_http(address: tuple[str, int], data: bytes) -> bytes:
    """Send ``data`` on a new connection; what comes back until the server closes."""
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        if data:
            await stream.send_all(data)
        answer = b""
        while chunk := await stream.receive_some(65536):
            answer += chunk
    return answer


def metric(metrics: Metrics, transport: str, code: str, status: str) -> int:
    name = f'mcp_server_refusals_total{{transport="{transport}",code="{code}",status="{status}"}}'
    for line in metrics.render().decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


async def test_http_parser_and_allow_list_refusals_are_observed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, seen, metrics = observed()
    limits = HttpLimits(max_body_size=100, max_header_count=5)
    caplog.set_level(logging.INFO, logger="test.edge")
    with trio.fail_after(20):
        async with serving(app, http_limits=limits) as address:
            host = f"Host: 127.0.0.1:{address[1]}\r\n".encode()
            bad_line = await raw_http(address, b"NOT A REQUEST LINE\r\n\r\n")
            big = await raw_http(
                address,
                b"POST /mcp HTTP/1.1\r\n" + host + b"Content-Length: 1000\r\n\r\n" + b"x" * 1000,
            )
            many = await raw_http(
                address,
                b"GET /mcp HTTP/1.1\r\n" + host + b"".join(b"X-%d: y\r\n" % i for i in range(9))
                + b"\r\n",
            )  # fmt: skip
            evil_host = await raw_http(address, b"GET /mcp HTTP/1.1\r\nHost: evil.example\r\n\r\n")
            evil_origin = await raw_http(
                address, b"GET /mcp HTTP/1.1\r\n" + host + b"Origin: http://evil.example\r\n\r\n"
            )
    assert bad_line.startswith(b"HTTP/1.1 400 ")
    assert big.startswith(b"HTTP/1.1 413 ")
    assert many.startswith(b"HTTP/1.1 431 ")
    assert evil_host.startswith(b"HTTP/1.1 403 ") and evil_origin.startswith(b"HTTP/1.1 403 ")
    statuses = [(r.status, r.transport) for r in seen.refusals]
    assert statuses == [(400, "http"), (413, "http"), (431, "http"), (403, "http"), (403, "http")]
    for refusal in seen.refusals:
        assert refusal.peer is not None and refusal.peer.startswith("127.0.0.1:")
        assert refusal.connection_id.startswith("http-") and refusal.message
    assert "Host" in seen.refusals[3].message and "Origin" in seen.refusals[4].message
    assert metric(metrics, "http", "-32600", "403") == 2
    assert metric(metrics, "http", "-32600", "413") == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "test.edge"]
    assert sum("mcp refusal" in line and "status=403" in line for line in lines) == 2
    assert any("status=431" in line and "peer=127.0.0.1:" in line for line in lines)


async def test_http_connection_cap_refusal_is_observed() -> None:
    app, seen, metrics = observed()
    with trio.fail_after(20):
        async with serving(app, http_limits=HttpLimits(max_connections=1)) as address:
            held = await trio.open_tcp_stream(*address)  # holds the one slot
            async with held:
                await trio.sleep(0.1)
                # Nothing sent: the 503 is written at accept, before any read, and closing
                # with unread bytes would reset the connection under it.
                refused = await raw_http(address, b"")
    assert refused.startswith(b"HTTP/1.1 503 ")
    assert [(r.status, r.code) for r in seen.refusals] == [(503, None)]
    assert metric(metrics, "http", "none", "503") == 1


async def _ws_close(raw: RawWebSocket) -> int | None:
    while (event := await raw.next_event()) is not None:
        if isinstance(event, CloseConnection):
            return event.code
    return None


async def test_websocket_refusals_are_observed() -> None:
    app, seen, metrics = observed(max_frame_size=1000)  # the WebSocket message limit
    with trio.fail_after(20):
        async with serving(app, "ws") as address:
            # An upgrade from a foreign Origin: 403 before the socket exists.
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                raw = RawWebSocket(stream)
                await raw.send(
                    Request(
                        host=f"127.0.0.1:{address[1]}",
                        target="/mcp",
                        subprotocols=["mcp"],
                        extra_headers=[(b"origin", b"http://evil.example")],
                    )
                )
                rejected = await raw.next_event()
                assert type(rejected).__name__ == "RejectConnection"
                assert rejected.status_code == 403  # type: ignore[union-attr]
            # Not JSON over an open socket: -32700 in-band, the socket lives on.
            raw = await open_raw_websocket(address)
            await raw.send(TextMessage(data="{not json"))
            event = await raw.next_event()
            assert isinstance(event, TextMessage) and '"code":-32700' in event.data
            await raw.send(BytesMessage(data=b"{}"))  # binary: closed with 1003
            assert await _ws_close(raw) == 1003
            await raw.stream.aclose()
            raw = await open_raw_websocket(address)
            await raw.send(TextMessage(data="x" * 5000))  # over the limit: 1009
            assert await _ws_close(raw) == 1009
            await raw.stream.aclose()
    kinds = [(r.transport, r.code, r.status, r.close_code) for r in seen.refusals]
    assert kinds == [
        ("ws", None, 403, None),
        ("ws", -32700, None, None),
        ("ws", None, None, 1003),
        ("ws", None, None, 1009),
    ]
    assert all(r.connection_id.startswith("ws-") for r in seen.refusals)
    assert seen.refusals[0].peer is not None and seen.refusals[2].peer is not None
    assert "1000" in seen.refusals[3].message  # the limit, named
    assert metric(metrics, "ws", "none", "close-1009") == 1
    assert metric(metrics, "ws", "-32700", "none") == 1


async def test_websocket_sweep_closes_are_observed() -> None:
    """A message still assembling after ``ws_message_timeout``: closed with 1008 by the
    transport's sweep (another task than the connection's reader), observed all the same."""
    app, seen, metrics = observed()
    limits = HttpLimits(ws_message_timeout=0.3)
    with trio.fail_after(20):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)
            await raw.send_raw(frame(0x1, b'{"jsonrpc":', fin=False))  # never finished
            assert await _ws_close(raw) == 1008
            await raw.stream.aclose()
            await trio.sleep(0.1)  # the reader's side of the close
    assert [(r.close_code, r.message) for r in seen.refusals] == [(1008, "message too slow")]
    assert metric(metrics, "ws", "none", "close-1008") == 1


async def test_websocket_no_pong_close_is_observed() -> None:
    """A peer that never answers the transport's pings (RFC 6455 5.5.2: a ping must be
    answered by a pong) is closed with 1011 after ``ws_ping_timeout``, by the sweep's ping
    task, and the close reaches ``on_refusal``; a peer that answers is kept (the same
    settings), so the close is the missing pong's, not the clock's."""
    app, seen, metrics = observed()
    limits = HttpLimits(ws_ping_interval=0.2, ws_ping_timeout=1.0)
    with trio.fail_after(20):
        async with serving(app, "ws", http_limits=limits) as address:
            answering = await open_raw_websocket(address)
            answered: list[object] = []

            async def answer() -> None:
                while (event := await answering.next_event()) is not None:
                    assert isinstance(event, Ping), event
                    await answering.send(event.response())
                    answered.append(event)
                answered.append(None)  # closed: fails the assertion below

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer)
                silent = await open_raw_websocket(address)
                pings = 0
                while (event := await silent.next_event()) is not None:
                    if isinstance(event, Ping):
                        pings += 1  # never answered
                        continue
                    assert isinstance(event, CloseConnection), event
                    break
                assert event is not None and event.code == 1011
                assert pings >= 1
                await silent.stream.aclose()
                await trio.sleep(1.5)  # the answering peer, longer again: never closed
                nursery.cancel_scope.cancel()
            assert len(answered) >= 3 and None not in answered
            await answering.stream.aclose()
            await trio.sleep(0.1)  # the reader's side of the close
    assert [(r.transport, r.close_code, r.message) for r in seen.refusals] == [
        ("ws", 1011, "ping timeout")
    ]
    assert seen.refusals[0].connection_id.startswith("ws-")
    assert metric(metrics, "ws", "none", "close-1011") == 1


async def test_websocket_connection_cap_refusal_is_observed() -> None:
    app, seen, _ = observed()
    with trio.fail_after(20):
        async with serving(app, "ws", http_limits=HttpLimits(max_connections=1)) as address:
            first = await open_raw_websocket(address)
            refused = await raw_http(address, b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
            await first.stream.aclose()
    assert refused.startswith(b"HTTP/1.1 503 ")
    assert [(r.transport, r.status) for r in seen.refusals] == [("ws", 503)]


async def test_a_refused_notification_gets_no_answer_but_is_observed() -> None:
    app, seen, metrics = observed()
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": {"not": "an id"}},
                }
            )
            pong = await peer.call("ping")  # the next thing on the wire is ping's answer
            assert pong["result"] == {}
    assert [(r.method, r.code, r.request_id) for r in seen.refusals] == [
        ("notifications/cancelled", -32600, None)
    ]
    assert metric(metrics, "memory", "-32600", "none") == 1


async def test_a_notification_refused_by_its_handler_is_observed() -> None:
    """A JSONRPCError raised for a notification (here by a middleware's on_notification) is
    answered with nothing; the observer hears of it with its code."""
    from runtime.middleware import Next
    from runtime.middleware import Request as McpRequest
    from runtime.protocol import JSONRPCError

    class Strict(Middleware):
        async def on_notification(self, request: McpRequest, call_next: Next) -> None:
            if request.method == "notifications/custom":
                raise JSONRPCError.invalid_params("custom needs a level")
            await call_next()

    app, seen, _ = observed()
    app.add_middleware(Strict())
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/custom", "params": {}})
            assert (await peer.call("ping"))["result"] == {}  # nothing came before it
    assert [(r.method, r.code) for r in seen.refusals] == [("notifications/custom", -32602)]
    assert "custom needs a level" in seen.refusals[0].message
