"""The legacy (2024-11-05) HTTP+SSE transport's ``endpoint`` event: the client POSTs every
message, with its headers (a bearer token among them), to the URL that event names. One of
another origin, or one the URL parser cannot read, ends the connection with TransportLost
before anything is sent there (the official SDK checks the origin too)."""

from __future__ import annotations

import pytest
import trio

from runtime.client import Backoff, TransportLost, open_client

from ..wire import read_head


async def _sse_server(
    endpoint: bytes, seen: list[bytes], task_status: trio.TaskStatus[int]
) -> None:
    """Answers every request's head with an SSE stream whose first event is ``endpoint``
    (``{port}`` in it: this server's port); records each request line."""

    async def handle(stream: trio.SocketStream) -> None:
        head = await read_head(stream)
        if head is None:
            return
        seen.append(head.split(b"\r\n", 1)[0])
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
            b"event: endpoint\ndata: " + endpoint.replace(b"{port}", b"%d" % port) + b"\n\n"
        )
        await trio.sleep_forever()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    task_status.started(port)
    await trio.serve_listeners(handle, listeners)


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (b"http://127.0.0.2:{port}/messages?session_id=1", "is not of the SSE stream's origin"),
        (b"https://127.0.0.1:{port}/messages", "is not of the SSE stream's origin"),
        (b"http://127.0.0.1:{port}@127.0.0.3:1/messages", "is not of the SSE stream's origin"),
        (b"//127.0.0.3:{port}/messages", "is not of the SSE stream's origin"),
        (b"http://x[/messages", "bad endpoint"),
        (b"http://127.0.0.1:99999/messages", "bad endpoint"),
    ],
)
async def test_an_endpoint_elsewhere_ends_the_connection_before_any_post(
    endpoint: bytes, message: str
) -> None:
    seen: list[bytes] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(_sse_server, endpoint, seen)
            with pytest.raises(TransportLost, match=message):
                async with open_client(
                    f"http://127.0.0.1:{port}/sse",
                    bearer_token="secret",
                    backoff=Backoff(max_attempts=0),
                ):
                    pass  # pragma: no cover
            nursery.cancel_scope.cancel()
    assert all(line.startswith(b"GET /sse ") for line in seen), seen


async def test_an_endpoint_of_the_same_origin_is_used() -> None:
    seen: list[bytes] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(_sse_server, b"/messages?session_id=1", seen)
            with pytest.raises(Exception):  # noqa: B017 (this server answers no POST)
                async with open_client(
                    f"http://127.0.0.1:{port}/sse", backoff=Backoff(max_attempts=0), timeout=2
                ):
                    pass  # pragma: no cover
            nursery.cancel_scope.cancel()
    assert b"POST /messages?session_id=1 HTTP/1.1" in seen, seen
