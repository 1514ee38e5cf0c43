"""A WebSocket server that stops in the middle of a message trips the client's read timeout
(runtime/client/_websocket.py): a raw socket peer on 127.0.0.1 does the opening handshake by
hand, then sends part of a frame and goes silent."""

from __future__ import annotations

import base64
import functools
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from runtime.client import Backoff, RequestTimeout, TransportLost, open_client
from runtime.client._websocket import FrameTracker

from ..wire import read_head

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 1.3
NEVER = Backoff(max_attempts=0)


def frame(payload: bytes, *, opcode: int = 0x1, fin: bool = True, mask: bytes = b"") -> bytes:
    """One WebSocket frame (RFC 6455 5.2), masked when ``mask`` (4 bytes) is given."""
    first = (0x80 if fin else 0) | opcode
    size = len(payload)
    mask_bit = 0x80 if mask else 0
    if size < 126:
        head = bytes([first, mask_bit | size])
    elif size < 1 << 16:
        head = bytes([first, mask_bit | 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([first, mask_bit | 127]) + size.to_bytes(8, "big")
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + payload


Peer = Callable[[trio.SocketStream], Awaitable[None]]


@asynccontextmanager
async def raw_peer(after_handshake: Peer) -> AsyncIterator[str]:
    """A WebSocket 'server' on a real socket: answers the opening handshake (subprotocol
    mcp), then runs ``after_handshake`` on the stream."""

    async def handle(stream: trio.SocketStream) -> None:
        request = await read_head(stream)
        if request is None:
            return
        key = next(
            line.split(b":", 1)[1].strip()
            for line in request.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
        await stream.send_all(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
        )
        await stream.receive_some(65536)  # the client's first request
        await after_handshake(stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"ws://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


PARTIALS = {
    # a text frame announcing 100 bytes, 10 of them sent
    "payload": frame(b"x" * 100)[:12],
    # a frame header cut inside its 16-bit extended length
    "header": frame(b"x" * 300)[:3],
    # a whole first fragment (FIN clear) and no continuation
    "fragment": frame(b'{"jsonrpc":', fin=False),
}


@pytest.mark.parametrize("kind", sorted(PARTIALS))
async def test_a_peer_that_stops_mid_message_trips_the_read_timeout(kind: str) -> None:
    async def stall(stream: trio.SocketStream) -> None:
        await stream.send_all(PARTIALS[kind])
        await trio.sleep_forever()

    async with raw_peer(stall) as url:
        started = time.monotonic()
        with trio.fail_after(10), pytest.raises(TransportLost) as caught:
            async with open_client(url, era="modern", read_timeout=0.5, timeout=30, backoff=NEVER):
                pass  # pragma: no cover
        took = time.monotonic() - started
    assert "stalled mid-message for 0.5 s" in str(caught.value)
    assert 0.4 < took < 5  # the read timeout, not the request's 30 s


async def test_a_silent_peer_between_messages_is_left_to_the_request_timeout() -> None:
    """A whole message (a notification) then silence: nothing is partly received, so the
    read timeout does not apply; the request's own timeout ends the wait."""

    async def quiet(stream: trio.SocketStream) -> None:
        note = (
            b'{"jsonrpc":"2.0","method":"notifications/message",'
            b'"params":{"level":"info","data":"hi"}}'
        )
        # a ping between two fragments of a message, then the last fragment: a control frame
        # in the middle of a fragmented message does not end it (RFC 6455 5.4)
        await stream.send_all(
            frame(note[:20], fin=False) + frame(b"", opcode=0x9) + frame(note[20:], opcode=0x0)
        )
        await trio.sleep_forever()

    async with raw_peer(quiet) as url:
        started = time.monotonic()
        with trio.fail_after(10), pytest.raises(RequestTimeout):
            async with open_client(url, era="modern", read_timeout=0.3, timeout=1.5, backoff=NEVER):
                pass  # pragma: no cover
        assert time.monotonic() - started >= 1.4


# -- the frame tracker, sans-IO -------------------------------------------------------------

HANDSHAKE = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"


@given(
    sizes=st.lists(
        st.sampled_from([0, 1, 125, 126, 127, 300, 65535, 65536, 70000]), min_size=1, max_size=3
    ),
    masked=st.booleans(),
    fragments=st.integers(1, 3),
)
def test_the_tracker_is_mid_message_exactly_until_each_message_ends(
    sizes: list[int], masked: bool, fragments: int
) -> None:
    """Fed byte by byte, the tracker is mid-message at every byte inside a message and not
    at its end; a ping between fragments does not end the message."""
    tracker = FrameTracker()
    for byte in HANDSHAKE:
        tracker.feed(bytes([byte]))
        assert not tracker.mid_message
    mask = b"\x01\x02\x03\x04" if masked else b""
    for size in sizes:
        message = b"".join(
            frame(b"a" * size, opcode=0x1 if n == 0 else 0x0, fin=n == fragments - 1, mask=mask)
            + (frame(b"p", opcode=0x9) if n < fragments - 1 else b"")
            for n in range(fragments)
        )
        # byte by byte, except the middle of a long payload (in one piece, for speed)
        pieces = [message[n : n + 1] for n in range(min(len(message), 400))]
        if len(message) > 800:
            pieces.append(message[400:-400])
        pieces += [message[n : n + 1] for n in range(max(400, len(message) - 400), len(message))]
        assert b"".join(pieces) == message
        for n, piece in enumerate(pieces):
            assert n == 0 or tracker.mid_message
            tracker.feed(piece)
        assert not tracker.mid_message


def test_the_tracker_reads_whole_chunks_and_a_handshake_split_anywhere() -> None:
    data = HANDSHAKE + frame(b"a" * 300) + frame(b"b" * 10)
    for split in range(len(data) + 1):
        tracker = FrameTracker()
        tracker.feed(data[:split])
        tracker.feed(data[split:])
        assert not tracker.mid_message, split
    tracker = FrameTracker()
    tracker.feed(data + frame(b"c" * 10)[:5])
    assert tracker.mid_message
