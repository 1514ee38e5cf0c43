"""A client that goes away while the app writes its answer is routine: logged at info
level as "client gone", never as an application failure with a traceback."""

from __future__ import annotations

import logging

import pytest
import trio

from runtime.transports.http._exchange import Exchange, HttpRequest

from .test_http_server import driver


async def test_a_broken_write_is_logged_as_client_gone(caplog: pytest.LogCaptureFixture) -> None:
    async def app(request: HttpRequest, exchange: Exchange) -> None:
        await exchange.start_stream(200, "text/event-stream", [])
        # What a write to a socket whose peer closed raises (BrokenPipe under it).
        raise trio.BrokenResourceError("socket connection broken: [Errno 32] Broken pipe")

    caplog.set_level(logging.INFO, logger="mcp_runtime.http")
    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk  # the server closes the connection after it
            await stream.aclose()
    assert data.startswith(b"HTTP/1.1 200")
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert failures == []
    assert any("client gone" in r.getMessage() for r in caplog.records)
