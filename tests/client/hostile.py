"""Hostile MCP servers for the client's tests, on real loopback sockets: they send exact
bytes (duplicate ids, 100,000 levels of nesting, floods, oversized answers) and record what
the client sends back, so that the tests assert on the wire.

- :class:`LinePeer` / :func:`serve_lines`: NDJSON over TCP (``tcp://`` targets), one
  scripted coroutine per connection.
- :class:`HttpPeer`: a Streamable HTTP server (keep-alive, one request at a time per
  connection) whose every exchange goes to a scripted coroutine; it counts the connections
  open at once, as the client's resource use seen from outside.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import trio

#: What a 2026-07-28 server answers to ``server/discover``.
DISCOVERED = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "1"}},
    "resultType": "complete",
}
#: What a handshake-era server answers to ``initialize``.
INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "hostile", "version": "1"},
}
NO_TOOLS = {"tools": [], "resultType": "complete"}


def deep(levels: int) -> bytes:
    """A JSON array nested ``levels`` deep (2 bytes a level: 100,000 levels is 200 KB)."""
    return b"[" * levels + b"]" * levels


def reply(request: dict[str, Any], result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()


class LinePeer:
    """One NDJSON connection, from the server's side."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._buffer = b""

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            data = await self.stream.receive_some(1 << 16)
            if not data:
                raise EOFError("the client closed the connection")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    async def send(self, *lines: bytes) -> None:
        await self.stream.send_all(b"".join(line + b"\n" for line in lines))

    async def discover(self) -> dict[str, Any]:
        """Answer the client's ``server/discover``; return its next message."""
        request = await self.receive()
        assert request["method"] == "server/discover", request
        await self.send(reply(request, DISCOVERED))
        return await self.receive()


@asynccontextmanager
async def serve_lines(script: Callable[[LinePeer], Awaitable[None]]) -> AsyncIterator[str]:
    """A TCP server running ``script`` on each connection; yields its ``tcp://`` target."""

    async def handle(stream: trio.SocketStream) -> None:
        with suppress(EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
            await script(LinePeer(stream))

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        )
        yield f"tcp://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


class Exchange:
    """One HTTP request to :class:`HttpPeer`, and how to answer it."""

    def __init__(
        self, stream: trio.SocketStream, line: str, headers: dict[str, str], body: bytes
    ) -> None:
        self.stream = stream
        self.method, self.target = line.split()[:2]
        self.headers = headers
        self.body = body
        self.message: Any = json.loads(body) if body else None

    async def json(self, payload: Any, status: str = "200 OK", extra: str = "") -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        await self.stream.send_all(
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    async def accepted(self) -> None:
        await self.stream.send_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")

    async def start_events(self) -> None:
        """Start an SSE answer (the connection closes when the exchange ends)."""
        await self.stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        )

    async def event(self, data: bytes, event_id: str | None = None) -> None:
        head = f"id: {event_id}\n".encode() if event_id is not None else b""
        await self.stream.send_all(head + b"data: " + data + b"\n\n")


class HttpPeer:
    """A scripted Streamable HTTP server: ``script(exchange)`` answers each request and
    returns True when the connection must close after it (an SSE answer)."""

    def __init__(self, script: Callable[[Exchange], Awaitable[bool | None]]) -> None:
        self.script = script
        self.connections = 0  # accepted
        self.open = 0
        self.most_open = 0
        self.requests: list[Exchange] = []

    async def handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(1 << 16)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines[1:])
                }
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    data = await stream.receive_some(1 << 16)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                exchange = Exchange(stream, lines[0], headers, body)
                self.requests.append(exchange)
                if await self.script(exchange):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.open -= 1
            with trio.CancelScope(shield=True):
                await stream.aclose()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Listen on loopback; yields the endpoint's URL (``/mcp``)."""
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                functools.partial(trio.serve_tcp, self.handle, 0, host="127.0.0.1")
            )
            yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
            nursery.cancel_scope.cancel()
