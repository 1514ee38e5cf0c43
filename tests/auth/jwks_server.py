"""A loopback JWKS endpoint for tests: serves a document over plain HTTP/1.1 and counts."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from ..wire import read_head


@dataclass
class JWKSEndpoint:
    document: Any
    cache_control: str | None = "max-age=600"
    chunked: bool = False
    status: int = 200
    #: Keep the connection open after answering (a server ignoring "Connection: close").
    linger: bool = False
    #: Request lines received, in order.
    requests: list[str] = field(default_factory=list)
    port: int = 0

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/.well-known/jwks.json"

    async def handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            data = await read_head(stream)
            if data is None:
                return
            self.requests.append(data.split(b"\r\n", 1)[0].decode())
            body = json.dumps(self.document).encode()
            head = [f"HTTP/1.1 {self.status} X", "Content-Type: application/json"]
            if self.cache_control is not None:
                head.append(f"Cache-Control: {self.cache_control}")
            if self.chunked:
                head.append("Transfer-Encoding: chunked")
                half = len(body) // 2
                payload = b"".join(
                    b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:])
                )
                payload += b"0\r\n\r\n"
            else:
                head.append(f"Content-Length: {len(body)}")
                payload = body
            head.append("Connection: close")
            await stream.send_all(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
            if self.linger:
                await trio.sleep_forever()


@asynccontextmanager
async def serve_jwks(endpoint: JWKSEndpoint) -> AsyncIterator[JWKSEndpoint]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, endpoint.handle, 0, host="127.0.0.1")
        )
        endpoint.port = listeners[0].socket.getsockname()[1]
        try:
            yield endpoint
        finally:
            nursery.cancel_scope.cancel()
