"""A tiny raw HTTP/1.1 client (h11 on trio) for pinning status codes, headers and SSE bytes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import h11
import msgspec
import trio

from runtime.framing import SSEDecoder, SSEEvent

JSON_AND_SSE = "application/json, text/event-stream"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


@dataclass
class HttpConn:
    stream: trio.SocketStream
    address: tuple[str, int]
    conn: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    sse: SSEDecoder = field(default_factory=SSEDecoder)

    async def send(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | Any = b"",
    ) -> None:
        if not isinstance(body, bytes):
            body = msgspec.json.encode(body)
        hdrs = {
            "host": f"{self.address[0]}:{self.address[1]}",
            "accept": JSON_AND_SSE,
            "content-type": "application/json",
        }
        for key, value in (headers or {}).items():
            if value is None:
                hdrs.pop(key.lower(), None)
            else:
                hdrs[key.lower()] = value
        hdrs["content-length"] = str(len(body))
        data = self.conn.send(h11.Request(method=method, target=path, headers=list(hdrs.items())))
        data += self.conn.send(h11.Data(data=body)) if body else b""
        data += self.conn.send(h11.EndOfMessage())
        await self.stream.send_all(data)

    async def _event(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.conn.receive_data(await self.stream.receive_some(65536))

    async def head(self) -> Response:
        event = await self._event()
        assert isinstance(event, h11.Response), event
        headers = {k.decode().lower(): v.decode() for k, v in event.headers}
        return Response(event.status_code, headers)

    async def body(self) -> bytes:
        out = b""
        while True:
            event = await self._event()
            if isinstance(event, h11.Data):
                out += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return out

    async def response(self) -> Response:
        response = await self.head()
        response.body = await self.body()
        return response

    async def next_event(self) -> SSEEvent | None:
        """The next SSE event of a streamed body, or None at its end."""
        while True:
            sse_event = self.sse.next_event()
            if sse_event is not None:
                return sse_event
            event = await self._event()
            if isinstance(event, h11.Data):
                self.sse.feed(event.data)
            else:
                return None

    async def events(self) -> list[SSEEvent]:
        out = []
        while (event := await self.next_event()) is not None:
            out.append(event)
        return out

    async def aclose(self) -> None:
        await self.stream.aclose()


async def connect(address: tuple[str, int]) -> HttpConn:
    stream = await trio.open_tcp_stream(address[0], address[1])
    return HttpConn(stream, address)


async def request(
    address: tuple[str, int],
    method: str,
    path: str = "/mcp",
    *,
    headers: dict[str, str] | None = None,
    body: bytes | Any = b"",
) -> Response:
    """One request on a fresh connection; the whole response (SSE bodies included)."""
    conn = await connect(address)
    try:
        await conn.send(method, path, headers=headers, body=body)
        return await conn.response()
    finally:
        await conn.aclose()


def sse_messages(body: bytes) -> list[Any]:
    """The JSON messages of a whole SSE body (priming events skipped)."""
    decoder = SSEDecoder()
    decoder.feed(body)
    decoder.feed(b"")
    out = []
    while (event := decoder.next_event()) is not None:
        if event.data:
            out.append(msgspec.json.decode(event.data))
    return out


#: The handshake-era revision of :func:`open_raw_session` and :func:`session_headers`.
SESSION_VERSION = "2025-11-25"


def session_headers(session: str, **extra: str) -> dict[str, str]:
    """The headers of a request in a handshake-era session (and ``extra``)."""
    return {"mcp-session-id": session, "mcp-protocol-version": SESSION_VERSION, **extra}


async def open_raw_session(
    where: tuple[str, int],
    *,
    initialized_at: tuple[str, int] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> str:
    """A handshake-era session opened over raw HTTP: initialize POSTed to ``where``, then
    ``notifications/initialized`` to ``initialized_at`` (another replica, say; ``where`` by
    default); its id."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": SESSION_VERSION,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    response = await request(where, "POST", body=body)
    assert response.status == 200, response
    session = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = await request(
        initialized_at or where, "POST", headers=session_headers(session), body=note
    )
    assert done.status == 202, done
    return session
