"""issue 16 item 3: a peer that trickles a body or a WebSocket message is cut off by a total
deadline, not only by the gap between its chunks."""

from __future__ import annotations

import contextlib

import trio

from runtime.transports import HttpLimits

from .app import init_body, make_app, serving
from .http_client import request


async def _trickle(address: tuple[str, int], path: str, interval: float) -> tuple[float, bytes]:
    """Send a POST whose body comes one byte per ``interval`` (each gap well inside the
    per-chunk timeout); returns (seconds until the server answered or closed, answer)."""
    stream = await trio.open_tcp_stream(*address)
    started = trio.current_time()
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 50
    head = (
        b"POST %b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n"
        % (path.encode(), len(body))
    )
    answer = b""
    async with stream, trio.open_nursery() as nursery:

        async def read() -> None:
            nonlocal answer
            # The server closes after its answer while bytes still come: the kernel may then
            # reset the connection after the answer instead of a clean EOF (both end it).
            with contextlib.suppress(trio.BrokenResourceError):
                while chunk := await stream.receive_some(4096):
                    answer += chunk
            nursery.cancel_scope.cancel()

        nursery.start_soon(read)
        await stream.send_all(head)
        for byte in body:
            try:
                await stream.send_all(bytes([byte]))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                break
            await trio.sleep(interval)
    return trio.current_time() - started, answer


async def test_a_trickled_body_meets_a_total_deadline() -> None:
    app, _ = make_app()
    limits = HttpLimits(body_timeout=1.0, body_total_timeout=1.5)
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            elapsed, answer = await _trickle(address, "/mcp", 0.1)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"body too slow" in answer
    assert 1.4 < elapsed < 3.5, elapsed


async def test_a_trickled_legacy_sse_post_meets_the_same_deadline() -> None:
    app, _ = make_app()
    limits = HttpLimits(body_timeout=1.0, body_total_timeout=1.5)
    with trio.fail_after(10):
        async with serving(app, "sse", http_limits=limits) as address:
            elapsed, answer = await _trickle(address, "/messages/?session_id=x", 0.1)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert 1.4 < elapsed < 3.5, elapsed


async def test_trickling_clients_do_not_hold_every_slot() -> None:
    """The issue's attack: as many tricklers as connection slots; once the deadline passes,
    a new client is served again."""
    app, _ = make_app()
    limits = HttpLimits(body_timeout=1.0, body_total_timeout=1.5, max_connections=4)
    with trio.fail_after(15):
        async with serving(app, http_limits=limits) as address, trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(_trickle, address, "/mcp", 0.2)
            await trio.sleep(2.5)
            ok = await request(address, "POST", body=init_body())
            assert ok.status == 200, ok


async def test_a_trickled_frame_meets_the_read_timeout_over_tcp() -> None:
    """Stream transports too: ``Limits.read_timeout`` counts from a frame's first byte, not
    from its last chunk (a frame at one byte per 50 ms used to stay open for ever)."""
    from runtime import Limits, Server

    server = Server("trickle", "0", limits=Limits(read_timeout=1.0))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            address = await nursery.start(server.serve_tcp, 0)
            stream = await trio.open_tcp_stream(*address[:2])
            started = trio.current_time()
            for byte in b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 20:
                try:
                    await stream.send_all(bytes([byte]))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    break
                await trio.sleep(0.05)
                if trio.current_time() - started > 3:
                    break
            assert await stream.receive_some(100) == b""
            assert trio.current_time() - started < 2.5
            nursery.cancel_scope.cancel()
