"""Raw-wire peers for tests: send exact bytes, read back decoded frames, with timeouts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio
import trio.testing

from runtime import Server
from runtime.core import Session
from runtime.framing import Framer
from runtime.transports import FramedChannel, FramingName, make_framer


async def read_head(stream: trio.abc.ReceiveStream) -> bytes | None:
    """Bytes off ``stream`` up to and including the end of an HTTP head (``\r\n\r\n``;
    what came after it in the same reads too); None when the peer closed before it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(4096)
        if not chunk:
            return None
        data += chunk
    return data


class RawPeer:
    """A client that speaks raw bytes to a server over any trio stream."""

    def __init__(
        self,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
        framing: FramingName,
    ) -> None:
        self.send_stream = send_stream
        self.receive_stream = receive_stream
        self.framer: Framer = make_framer(framing, 64 * 1024 * 1024)
        self._next_id = 0

    def frame(self, payload: bytes) -> bytes:
        return self.framer.encode(payload)

    async def send_bytes(self, data: bytes) -> None:
        await self.send_stream.send_all(data)

    async def send(self, message: Any) -> None:
        payload = message if isinstance(message, bytes) else msgspec.json.encode(message)
        await self.send_stream.send_all(self.frame(payload))

    async def receive_frame(self, timeout: float = 5.0) -> bytes:
        with trio.fail_after(timeout):
            while True:
                frame = self.framer.next_frame()
                if frame is not None:
                    return frame
                data = await self.receive_stream.receive_some(65536)
                if not data:
                    raise EOFError("server closed the stream")
                self.framer.feed(data)

    async def receive(self, timeout: float = 5.0) -> Any:
        return msgspec.json.decode(await self.receive_frame(timeout))

    async def call(self, method: str, params: Any = None, timeout: float = 5.0) -> Any:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": f"rp{self._next_id}", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        reply = await self.receive(timeout)
        assert reply["id"] == message["id"], reply
        return reply

    async def initialize(self) -> Any:
        reply = await self.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply


@asynccontextmanager
async def open_memory_peer(
    server: Server, framing: FramingName = "ndjson"
) -> AsyncIterator[RawPeer]:
    """Serve ``server`` over an in-memory stream pair and yield a raw peer to it."""
    client_end, server_end = trio.testing.memory_stream_pair()
    limits = server.limits
    channel = FramedChannel(
        server_end,
        server_end,
        make_framer(framing, limits.max_frame_size),
        read_timeout=limits.read_timeout,
        idle_timeout=limits.idle_timeout,
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve_connection(channel, session=Session("memory")))
        yield RawPeer(client_end, client_end, framing)
        await client_end.send_stream.aclose()
        nursery.cancel_scope.deadline = trio.current_time() + 5
