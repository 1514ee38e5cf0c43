"""A reply given as runtime.protocol.Pieces (a long text encoded apart from its envelope,
issue 22 target 2) is written as its buffers, never joined: over stdio's FdIO between its
NDJSON frame's head and tail, and over HTTP beside its head in ``writev`` calls. The bytes
that arrive are the joined whole, whatever the socket takes at a time and behind whatever
write was in progress."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest
import trio
import trio.testing

from runtime.features._contents import ENCODE_PIECE
from runtime.framing import ContentLengthFramer, NdjsonFramer
from runtime.protocol import Pieces
from runtime.transports import FramedChannel
from runtime.transports._fdio import FdIO
from runtime.transports.http import _socket as http_socket
from runtime.transports.http._http11 import RequestParser
from runtime.transports.http._socket import SocketIO

from .test_http_big_bodies import payload
from .test_http_big_replies import (
    LOW_WATER,
    TRIO_LOW_WATER,
    big_text,
    make_server,
    read_exactly,
    read_request,
    read_response,
    read_text,
    serving,
    small_read_works,
    tcp_pair,
)

MIB = 1 << 20


def _reply(size: int, seed: int) -> Pieces:
    """A reply in three buffers: an envelope's head, a big bytearray, its tail."""
    return Pieces([b'{"result":', bytearray(payload(size, seed)), b"}"])


async def _read_fd(fd: int, size: int) -> bytes:
    os.set_blocking(fd, False)
    got = bytearray()
    while len(got) < size:
        await trio.lowlevel.wait_readable(fd)
        got += os.read(fd, 1 << 16)
    return bytes(got)


@pytest.mark.parametrize("framer", [NdjsonFramer, ContentLengthFramer])
async def test_a_lone_pieces_reply_goes_to_fdio_as_its_parts_uncopied(
    framer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = _reply(3 * MIB, 1)
    # NDJSON refuses a raw newline: the random bytes must hold none.
    reply = Pieces([part.replace(b"\n", b" ") for part in reply.parts])
    sent: list[object] = []
    send_all = FdIO.send_all

    async def spy(self: FdIO, data: Any) -> None:
        sent.append(data)
        await send_all(self, data)

    monkeypatch.setattr(FdIO, "send_all", spy)
    r, w = os.pipe()
    channel = FramedChannel(FdIO(r), FdIO(w), framer())
    whole = channel._framer.encode(reply.join())
    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                # (send_now: the outbox's way; a big message goes out as its parts)
                pending = channel.send_now([(reply, 1)])
                assert pending is not None
                nursery.start_soon(lambda: pending)
                got = await _read_fd(r, len(whole))
        assert got == whole
        # Every buffer of the reply went to the descriptor as it is (the same objects).
        assert [part for part in sent if any(part is p for p in reply.parts)] == list(reply.parts)
    finally:
        await channel.aclose()


async def test_pieces_among_other_messages_are_joined_in_order() -> None:
    r, w = os.pipe()
    channel = FramedChannel(FdIO(r), FdIO(w), NdjsonFramer())
    reply = Pieces([b'{"id":2,', bytearray(b'"x":"'), b'y"}'])
    try:
        with trio.fail_after(5):
            assert channel.send_now([(b'{"id":1}', 1), (reply, 2), (b'{"id":3}', 3)]) is None
            assert os.read(r, 200) == b'{"id":1}\n{"id":2,"x":"y"}\n{"id":3}\n'
            await channel.send([(b'{"id":4}', 4), (reply, 2)])
            assert os.read(r, 200) == b'{"id":4}\n{"id":2,"x":"y"}\n'
    finally:
        await channel.aclose()


def _writev_log(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The buffer sizes of every ``writev`` the HTTP socket makes."""
    calls: list[list[int]] = []
    writev = os.writev

    def logged(fd: int, buffers: Any) -> int:
        calls.append([len(memoryview(b)) for b in buffers])
        return writev(fd, buffers)

    monkeypatch.setattr(http_socket.os, "writev", logged)
    return calls


async def test_http_writes_a_head_and_pieces_as_vectors_whatever_the_socket_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _writev_log(monkeypatch)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"
    body = _reply(5 * MIB, 2)
    first = payload(6 * MIB, 3)
    with trio.fail_after(30):
        server, client = await tcp_pair(rcvbuf=64 * 1024)
        io = SocketIO(server.socket, RequestParser(8192, 100), 10.0, read_cap=1 << 16)
        # At once, into an empty socket (the usual case): one writev of all four buffers
        # first, the rest of them in writevs too, never one joined bytes.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(io.write_pair, head, body)
            got = await read_exactly(client, len(head) + body.nbytes)
        assert got == head + body.join()
        sizes = [len(head), *(len(part) for part in body.parts)]
        assert calls[0] == sizes
        assert max(max(call) for call in calls) <= max(sizes)  # (no buffer bigger: no join)
        # Behind a write in progress (it holds the lock: nobody reads yet).
        calls.clear()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(io.write, first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(io.write_pair, head, body)
            await trio.testing.wait_all_tasks_blocked()
            got = await read_exactly(client, len(first) + len(head) + body.nbytes)
        assert got == first + head + body.join()
        assert calls and calls[0] == sizes  # (waited its turn, then went as a vector)
        # Into a socket so full that not even the head goes at once.
        filler, piece = bytearray(), payload(1 << 16, 4)
        while True:
            try:
                filler += piece[: os.write(server.socket.fileno(), piece)]
            except BlockingIOError:
                break
        async with trio.open_nursery() as nursery:
            nursery.start_soon(io.write_pair, head, body)
            got = await read_exactly(client, len(filler) + len(head) + body.nbytes)
        assert got == bytes(filler) + head + body.join()
        assert server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        await server.aclose()
        await client.aclose()


async def test_http_pieces_to_a_reader_that_hangs_up_mid_write_break_the_write() -> None:
    with trio.fail_after(20):
        server, client = await tcp_pair(rcvbuf=64 * 1024)
        io = SocketIO(server.socket, RequestParser(8192, 100), 10.0, read_cap=1 << 16)

        async def hang_up() -> None:
            assert await client.receive_some(1 << 16)  # some of it came
            client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            await client.aclose()  # a reset, mid-reply

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hang_up)
            with pytest.raises(trio.BrokenResourceError):
                await io.write_pair(b"HEAD\r\n\r\n", _reply(24 * MIB, 5))
        assert server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        await server.aclose()


# -- a Server over HTTP: resources/read of a text longer than ENCODE_PIECE ------------------


def _sse_only_request(request_id: int, size: int) -> bytes:
    return read_request(request_id, size).replace(
        b"Accept: application/json, text/event-stream", b"Accept: text/event-stream"
    )


async def test_a_long_text_reply_goes_to_the_socket_as_pieces_byte_exact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bodies: list[object] = []
    write_pair = SocketIO.write_pair

    async def spy(self: SocketIO, head: bytes, body: Any) -> None:
        bodies.append(body)
        await write_pair(self, head, body)

    monkeypatch.setattr(SocketIO, "write_pair", spy)
    size = ENCODE_PIECE * 2 + 5  # three pieces encoded, each with a checkpoint after it
    app = make_server()
    with trio.fail_after(60):
        async with serving(app) as (address, _):
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(read_request(1, size))
            reply = await read_response(stream, piece=1 << 16, pause=0)
            assert read_text(reply, 1) == big_text(size)
            await stream.aclose()
    # The text was one buffer (written piece by piece), between the envelope's two: the
    # response went beside its head as that vector, never joined.
    [body] = bodies
    assert isinstance(body, Pieces) and body.join() == reply
    assert [type(part) for part in body.parts] == [bytes, bytearray, bytes]
    assert len(body.parts[1]) == size + 2  # (the text and its quotes)


async def test_a_long_text_reply_to_an_sse_only_client_is_one_event() -> None:
    size = ENCODE_PIECE + 1
    app = make_server()
    with trio.fail_after(60):
        async with serving(app) as (address, _):
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(_sse_only_request(4, size))
            data = bytearray()
            while not data.endswith(b"0\r\n\r\n"):  # (chunked: the stream's last chunk)
                more = await stream.receive_some(1 << 16)
                assert more, data[:200]
                data += more
            assert data.startswith(b"HTTP/1.1 200 OK") and b"text/event-stream" in data[:300]
            event = bytes(data[data.index(b"data: ") + 6 :])
            message = event[: event.index(b"\n")]
            assert read_text(message, 4) == big_text(size)
            await small_read_works(address)
            await stream.aclose()
