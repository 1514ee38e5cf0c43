"""Big request and response bodies over a real socket, byte-exact both ways (issue 22,
target 2): a Content-Length body that does not come with its head is read straight from the
socket (``SocketIO.read_body``), past the parser, however the client's writes cut it."""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

import trio

from runtime.transports import HttpLimits
from runtime.transports.http._exchange import Exchange, HttpRequest
from runtime.transports.http._server import _sweep_deadlines

from .test_http_server import driver, post

MIB = 1 << 20


def payload(size: int, seed: int) -> bytes:
    """Bytes that differ everywhere (a misplaced or repeated piece cannot go unnoticed)."""
    return random.Random(seed).randbytes(size)


async def echo(request: HttpRequest, exchange: Exchange) -> None:
    """The body back, with its SHA-256 in a header (the check does not rest on the echo)."""
    digest = hashlib.sha256(request.body).hexdigest()
    await exchange.respond(
        200, request.body, content_type="application/octet-stream", headers=[("X-Sha", digest)]
    )


async def send_in_pieces(stream: trio.SocketStream, data: bytes, seed: int) -> None:
    """``data`` in many small writes of uneven sizes, yielding between them (so the server
    sees the body arrive a TCP segment or a few at a time)."""
    rng = random.Random(seed)
    at = 0
    while at < len(data):
        size = rng.randint(1, 9000)
        await stream.send_all(data[at : at + size])
        at += size
        if rng.random() < 0.3:
            await trio.lowlevel.checkpoint()


async def read_responses(stream: trio.SocketStream, count: int) -> list[tuple[bytes, bytes]]:
    """``count`` whole responses (head, body) off ``stream``, by their Content-Length."""
    data = bytearray()
    out: list[tuple[bytes, bytes]] = []
    while len(out) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = bytes(data[:end])
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(data) >= end + 4 + length:
                out.append((head, bytes(data[end + 4 : end + 4 + length])))
                del data[: end + 4 + length]
                continue
        more = await stream.receive_some(1 << 20)
        assert more, f"closed after {len(out)} responses"
        data += more
    assert not data
    return out


def check(head: bytes, body: bytes, sent: bytes) -> None:
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"x-sha: " + hashlib.sha256(sent).hexdigest().encode() in head.lower()
    assert len(body) == len(sent) and body == sent


async def test_content_length_bodies_split_into_many_segments_arrive_byte_exact() -> None:
    bodies = [payload(MIB, 1), payload(5 * MIB + 7, 2), payload(70_000, 3)]
    with trio.fail_after(60):
        async with driver(echo, max_body_size=8 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            async with trio.open_nursery() as nursery:
                # Pipelined: each body's last piece and the next head share writes, so a
                # read past a body's length would eat the next request.
                wire = b"".join(post("/x", body) for body in bodies)
                nursery.start_soon(send_in_pieces, stream, wire, 4)
                got = await read_responses(stream, len(bodies))
            for (head, body), sent in zip(got, bodies, strict=True):
                check(head, body, sent)
            await stream.aclose()


async def test_a_big_body_after_a_request_that_waited_is_read_whole() -> None:
    """A request that waits starts the connection's reader task; the next big body is read
    by the connection's own task once that reader stops, and nothing is lost between."""

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        if request.path == "/wait":
            await trio.sleep(0.05)
        await echo(request, exchange)

    big = payload(3 * MIB, 5)
    with trio.fail_after(60):
        async with driver(app, max_body_size=4 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            for round_ in range(3):
                small = payload(10, round_)
                await stream.send_all(post("/wait", small))
                [(head, body)] = await read_responses(stream, 1)
                check(head, body, small)
                await send_in_pieces(stream, post("/x", big), round_)
                [(head, body)] = await read_responses(stream, 1)
                check(head, body, big)
            await stream.aclose()


async def test_a_big_chunked_body_arrives_byte_exact() -> None:
    big = payload(2 * MIB + 3, 6)
    rng = random.Random(7)
    wire = bytearray(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    at = 0
    while at < len(big):
        size = rng.randint(1, 200_000)
        piece = big[at : at + size]
        wire += b"%x\r\n%b\r\n" % (len(piece), piece)
        at += size
    wire += b"0\r\n\r\n"
    with trio.fail_after(60):
        async with driver(echo, max_body_size=4 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            await send_in_pieces(stream, bytes(wire), 8)
            [(head, body)] = await read_responses(stream, 1)
            check(head, body, big)
            await stream.aclose()


async def test_a_hang_up_mid_body_closes_that_connection_and_the_server_lives_on() -> None:
    seen: list[int] = []

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        seen.append(len(request.body))
        await echo(request, exchange)

    big = payload(2 * MIB, 9)
    with trio.fail_after(30):
        async with driver(app, max_body_size=4 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/x", big)[:MIB])
            await trio.sleep(0.1)
            await stream.aclose()  # half a body, then gone: the app never sees it
            stream = await trio.open_tcp_stream(*address)
            await send_in_pieces(stream, post("/x", big), 10)
            [(head, body)] = await read_responses(stream, 1)
            check(head, body, big)
            await stream.aclose()
    assert seen == [len(big)]


async def test_a_body_over_the_limit_gets_413_before_it_is_read() -> None:
    with trio.fail_after(30):
        async with driver(echo, max_body_size=MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/x", payload(MIB + 1, 11))[:4096])
            data = b""
            while more := await stream.receive_some(65536):
                data += more
            assert data.startswith(b"HTTP/1.1 413 ")
            assert b"Connection: close" in data and b"exceeds 1048576 bytes" in data
            await stream.aclose()


class _Connection:
    """What ``_sweep_deadlines`` reads of a connection's driver (its phase, deadline and
    body room)."""

    def __init__(self, phase: str, room: bytearray) -> None:
        self.phase = phase
        self.room = room
        self.deadline = math.inf

    def expire(self) -> None:
        raise AssertionError("no deadline passed")


async def test_the_sweep_frees_the_body_room_of_idle_connections_only() -> None:
    """A connection that read a big body keeps its room while busy (the next body reuses
    it) and gives it up once idle: an idle connection holds no body's worth of memory."""
    idle = _Connection("idle", bytearray(MIB))
    reading = _Connection("body", bytearray(MIB))
    drivers: Any = {idle, reading}
    limits = HttpLimits(
        header_timeout=0.2, body_timeout=0.2, body_total_timeout=0.2, keep_alive_timeout=0.2
    )
    shutdown = trio.Event()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_sweep_deadlines, drivers, limits, shutdown)
            await trio.sleep(0.5)  # ten sweeps (one each 0.05 s with these limits)
            assert not idle.room
            assert len(reading.room) == MIB
            drivers.clear()
            shutdown.set()
