"""A raw WebSocket client on wsproto, for sending what a well-behaved client library will not:
fragments at a trickle, invalid UTF-8, unmasked frames, reserved opcodes."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Event, Message, Request


@dataclass
class RawWebSocket:
    stream: trio.SocketStream
    ws: WSConnection = field(default_factory=lambda: WSConnection(ConnectionType.CLIENT))

    async def send(self, event: Event) -> None:
        await self.stream.send_all(self.ws.send(event))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def next_event(self) -> Event | None:
        """The next event from the server; None when the stream ended."""
        while True:
            for event in self.ws.events():
                return event
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                return None
            self.ws.receive_data(data)

    async def close_code(self) -> int | None:
        """Read until the server's close frame; its code (None: the stream just ended)."""
        while (event := await self.next_event()) is not None:
            if isinstance(event, CloseConnection):
                return event.code
            assert isinstance(event, Message), event
        return None


async def open_raw_websocket(address: tuple[str, int], path: str = "/mcp") -> RawWebSocket:
    stream = await trio.open_tcp_stream(*address)
    raw = RawWebSocket(stream)
    await raw.send(Request(host=f"{address[0]}:{address[1]}", target=path, subprotocols=["mcp"]))
    event = await raw.next_event()
    assert isinstance(event, AcceptConnection), event
    return raw


def frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    """One client frame, built by hand (RFC 6455 section 5.2)."""
    head = bytes([(0x80 if fin else 0) | opcode])
    size = len(payload)
    mask_bit = 0x80 if mask else 0
    if size < 126:
        head += bytes([mask_bit | size])
    elif size < 65536:
        head += bytes([mask_bit | 126]) + size.to_bytes(2, "big")
    else:
        head += bytes([mask_bit | 127]) + size.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = b"\x01\x02\x03\x04"
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))
