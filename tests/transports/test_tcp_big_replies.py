"""Big replies over the TCP stream transport (``serve_tcp``, ``FdIO``; issue 22 target 2): the
rest of a big write the socket did not take at once goes on with the send low-water mark
lifted, in fewer writes than at trio's 16 KiB pace, byte-exact to a slow reader; the mark is
put back after the write and after a cancelled one; small frames keep trio's pace; a client
that stops reading and hangs up costs only its connection."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
from typing import Any

import pytest
import trio

from runtime import Server
from runtime.transports import FramedChannel, LowWater, _fdio, make_framer

from ..wire import RawPeer
from .test_http_big_replies import big_text

MIB = 1 << 20
LOW_WATER = socket.TCP_NOTSENT_LOWAT
#: trio.SocketStream's TCP_NOTSENT_LOWAT (trio/_highlevel_socket.py).
TRIO_LOW_WATER = 1 << 14
#: Linux: bytes queued on a socket that have not been sent yet (linux/sockios.h).
SIOCOUTQNSD = 0x894B


def make_server() -> Server:
    app = Server("big-tcp", "1.0.0")

    @app.resource("mem://text/{size}", mime_type="text/plain")
    def text(size: str) -> str:
        """``size`` characters of text."""
        return big_text(int(size))

    return app


def read_line(uri: str, request_id: int) -> bytes:
    request = {"jsonrpc": "2.0", "id": request_id, "method": "resources/read"}
    return json.dumps({**request, "params": {"uri": uri}}).encode() + b"\n"


async def read_reply(stream: trio.SocketStream, *, piece: int, pause: float) -> bytes:
    """One ndjson line, read ``piece`` bytes at a time with ``pause`` between (a slow
    reader)."""
    data = bytearray()
    while not data.endswith(b"\n"):
        more = await stream.receive_some(piece)
        assert more, f"closed after {len(data)} bytes"
        data += more
        if pause:
            await trio.sleep(pause)
    return bytes(data)


def count_big_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes FdIO's ``os.write`` calls took, for writes of over 64 KiB (a big reply's
    payload; nothing else the test does writes that much through ``os.write``)."""
    taken: list[int] = []
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        sent = real_write(fd, data)
        if len(data) > 64 * 1024:
            taken.append(sent)
        return sent

    monkeypatch.setattr(_fdio.os, "write", write)
    return taken


async def _read_over_tcp(size: int) -> str:
    app = make_server()
    async with trio.open_nursery() as nursery:
        host, port = (await nursery.start(app.serve_tcp, 0))[:2]
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            peer = RawPeer(stream, stream, "ndjson")
            await peer.initialize()
            await stream.send_all(read_line(f"mem://text/{size}", 7))
            line = await read_reply(stream, piece=64 * 1024, pause=0.002)
        nursery.cancel_scope.cancel()
    message = json.loads(line)
    assert message["id"] == 7, message
    text: str = message["result"]["contents"][0]["text"]
    return text


async def test_a_big_reply_over_tcp_reaches_a_slow_reader_byte_exact_in_fewer_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    size = 3 * MIB
    with trio.fail_after(30):
        taken = count_big_writes(monkeypatch)
        assert await _read_over_tcp(size) == big_text(size)
        lifted = len(taken)
        taken.clear()
        # The same with the mark kept at trio's pace.
        monkeypatch.setattr(LowWater, "lift", lambda self, rest: False)
        assert await _read_over_tcp(size) == big_text(size)
        kept = len(taken)
    assert lifted * 2 <= kept, (lifted, kept)


async def _pair(rcvbuf: int = 64 * 1024) -> tuple[FramedChannel, int, trio.SocketStream]:
    """A channel over the server side of a loopback TCP connection, a descriptor to read its
    socket's options through (a duplicate, closed by the caller), and the client side
    (reading nothing until told to)."""
    server, client = await _raw_pair(rcvbuf)
    probe = os.dup(server.socket.fileno())
    channel = FramedChannel.over_socket(server, make_framer("ndjson", 64 * MIB))
    return channel, probe, client


def mark_of(fd: int) -> int:
    with socket.socket(fileno=os.dup(fd)) as sock:
        value: int = sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER)
        return value


def unsent(fd: int) -> int:
    value: int = struct.unpack("i", fcntl.ioctl(fd, SIOCOUTQNSD, b"\0" * 4))[0]
    return value


async def drain(stream: trio.SocketStream, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        more = await stream.receive_some(1 << 16)
        assert more
        data += more
    return bytes(data)


async def test_the_mark_is_lifted_for_a_big_write_and_put_back_after_it() -> None:
    message = b'"' + os.urandom(3 * MIB).hex().encode() + b'"'
    with trio.fail_after(20):
        channel, probe, client = await _pair()
        try:
            assert mark_of(probe) == TRIO_LOW_WATER
            async with trio.open_nursery() as nursery:
                nursery.start_soon(channel.send, [(message, None)])
                await trio.sleep(0.1)  # the client reads nothing yet: the write waits
                assert mark_of(probe) == 0
                # Lifted, the kernel took far more than trio's 16 KiB beyond the window.
                assert unsent(probe) > 8 * TRIO_LOW_WATER, unsent(probe)
                got = await drain(client, len(message) + 1)
            assert got == message + b"\n"
            assert mark_of(probe) == TRIO_LOW_WATER
        finally:
            await channel.aclose()
            await client.aclose()
            os.close(probe)


async def test_the_mark_is_put_back_after_a_cancelled_write() -> None:
    message = b'"' + b"x" * (4 * MIB) + b'"'
    with trio.fail_after(20):
        channel, probe, client = await _pair()
        try:
            with trio.move_on_after(0.2) as scope:
                await channel.send([(message, None)])
            assert scope.cancelled_caught
            assert mark_of(probe) == TRIO_LOW_WATER
        finally:
            await channel.aclose()
            await client.aclose()
            os.close(probe)


async def test_small_frames_keep_trios_pace() -> None:
    """A client reading nothing: small frames stop going into the socket where they stop on
    a socket at trio's pace (about its mark beyond what the client's window takes), where a
    lifted write would queue much more (the test above)."""
    frame = b'"' + b"n" * 1000 + b'"'
    line = frame + b"\n"
    with trio.fail_after(20):
        # The yardstick: the same lines written straight to a socket with trio's mark.
        plain_server, plain_client = await _raw_pair()
        channel, probe, client = await _pair()
        try:
            plain = 0
            while True:
                try:
                    plain += os.write(plain_server.socket.fileno(), line)
                except BlockingIOError:
                    break
            ours = 0
            for _ in range(10_000):
                pending = channel.send_now([(frame, None)])
                if pending is not None:
                    break
                ours += len(line)
            else:
                raise AssertionError("the socket never filled up")
            assert mark_of(probe) == TRIO_LOW_WATER
            assert ours <= plain + 2 * len(line), (ours, plain)
            with trio.move_on_after(0.1):
                await pending  # (the client reads nothing: it waits)
            assert mark_of(probe) == TRIO_LOW_WATER
        finally:
            await channel.aclose()
            await client.aclose()
            await plain_server.aclose()
            await plain_client.aclose()
            os.close(probe)


async def _raw_pair(rcvbuf: int = 64 * 1024) -> tuple[trio.SocketStream, trio.SocketStream]:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    client = trio.socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    await client.connect(listener.socket.getsockname())
    server = await listener.accept()
    await listener.aclose()
    return server, trio.SocketStream(client)


async def test_a_client_that_stops_reading_and_hangs_up_costs_only_its_connection() -> None:
    app = make_server()
    size = 4 * MIB
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            host, port = (await nursery.start(app.serve_tcp, 0))[:2]
            other = await trio.open_tcp_stream(host, port)
            peer = RawPeer(other, other, "ndjson")
            await peer.initialize()
            quitter = await trio.open_tcp_stream(host, port)
            await RawPeer(quitter, quitter, "ndjson").initialize()
            await quitter.send_all(read_line(f"mem://text/{size}", 1))
            assert len(await quitter.receive_some(64 * 1024)) > 0  # the reply began
            await trio.sleep(0.2)  # ... and then the client stopped reading
            quitter.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await quitter.aclose()  # a reset, mid-reply
            # The other connection and the server go on: a big reply, then a small one.
            await other.send_all(read_line(f"mem://text/{MIB}", 2))
            reply = json.loads(await read_reply(other, piece=1 << 16, pause=0))
            assert reply["result"]["contents"][0]["text"] == big_text(MIB)
            assert (await peer.call("ping"))["result"] == {}
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("kind", [socket.AF_UNIX])
async def test_a_unix_socket_writes_big_replies_without_a_mark(kind: int) -> None:
    left, right = socket.socketpair(kind)
    channel = FramedChannel.over_socket(
        trio.SocketStream(trio.socket.from_stdlib_socket(left)), make_framer("ndjson", 64 * MIB)
    )
    reader = trio.SocketStream(trio.socket.from_stdlib_socket(right))
    message = b'"' + b"u" * (2 * MIB) + b'"'
    with trio.fail_after(20):
        async with reader, trio.open_nursery() as nursery:
            nursery.start_soon(channel.send, [(message, None)])
            assert await drain(reader, len(message) + 1) == message + b"\n"
        await channel.aclose()
