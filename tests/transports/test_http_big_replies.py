"""Big HTTP replies (issue 22, target 2): the socket's send low-water mark is lifted while a
reply the socket did not take at once is written, and put back after; big replies reach a
slow reader byte-exact; a reader that stops reading and hangs up mid-reply, or only stops
reading (the write timeout), costs the server that connection and nothing else; a shutdown
while a big reply is blocked ends the server within its grace."""

from __future__ import annotations

import json
import os
import random
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from runtime import Limits, Server
from runtime.transports.http._exchange import Exchange, HttpRequest
from runtime.transports.http._http11 import RequestParser
from runtime.transports.http._socket import SocketIO

from .app import modern, modern_headers
from .test_http_big_bodies import payload
from .test_http_server import driver, post

MIB = 1 << 20
#: trio.SocketStream's TCP_NOTSENT_LOWAT (trio/_highlevel_socket.py).
TRIO_LOW_WATER = 1 << 14
LOW_WATER = socket.TCP_NOTSENT_LOWAT


async def tcp_pair(rcvbuf: int | None = None) -> tuple[trio.SocketStream, trio.SocketStream]:
    """(server side, client side) of a loopback TCP connection, both trio SocketStreams (so
    with trio's low-water mark); ``rcvbuf`` set on the client before it connects."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    client = trio.socket.socket()
    if rcvbuf is not None:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    await client.connect(listener.socket.getsockname())
    server = await listener.accept()
    await listener.aclose()
    return server, trio.SocketStream(client)


async def read_exactly(stream: trio.SocketStream, size: int, *, piece: int = 1 << 16) -> bytes:
    data = bytearray()
    while len(data) < size:
        more = await stream.receive_some(min(piece, size - len(data)))
        assert more, f"closed after {len(data)} of {size} bytes"
        data += more
    return bytes(data)


async def test_a_held_back_write_goes_on_with_the_mark_lifted_and_the_mark_is_put_back() -> None:
    data = payload(8 * MIB, 1)
    with trio.fail_after(20):
        # The client reads nothing meanwhile: what a write takes is what the kernel queues.
        plain_server, plain_client = await tcp_pair(rcvbuf=64 * 1024)
        ours_server, ours_client = await tcp_pair(rcvbuf=64 * 1024)
        for sock in (plain_server.socket, ours_server.socket):
            assert sock.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        try:  # (trio's sockets are non-blocking)
            held_back = os.write(plain_server.socket.fileno(), data)  # with trio's mark
        except BlockingIOError:
            held_back = 0
        io = SocketIO(ours_server.socket, RequestParser(8192, 100), 5.0, read_cap=1 << 16)
        rest = io.write_now(data)
        assert rest is not None  # 8 MiB do not fit in any loopback send buffer
        taken = len(data) - len(rest)
        # The mark held the plain write to about the client's window and 16 KiB more; the
        # lifted one went on to the send buffer's size (several times that here).
        assert taken > 2 * held_back, (taken, held_back)
        assert ours_server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(io.write_rest, rest)
            got = await read_exactly(ours_client, len(data))
        assert got == data
        assert ours_server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        # A write that fits leaves the mark alone.
        assert io.write_now(b"small") is None
        assert await read_exactly(ours_client, 5) == b"small"
        assert ours_server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        for stream in (plain_server, plain_client, ours_server, ours_client):
            await stream.aclose()


async def test_small_writes_to_a_slow_reader_keep_trios_pace() -> None:
    event = b"data: " + b"x" * 1000 + b"\n\n"  # an SSE event, say
    with trio.fail_after(20):
        server, client = await tcp_pair(rcvbuf=64 * 1024)
        io = SocketIO(server.socket, RequestParser(8192, 100), 5.0, read_cap=1 << 16)
        taken = 0
        while io.write_now(event) is None:  # nobody reads
            taken += len(event)
        # Held back at about the client's window and trio's 16 KiB, not at the send
        # buffer's size (megabytes on loopback): the events back up to their stream.
        assert taken < 512 * 1024, taken
        assert server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        await server.aclose()
        await client.aclose()


async def test_a_write_that_waits_behind_another_puts_the_mark_back_when_cancelled() -> None:
    with trio.fail_after(20):
        server, client = await tcp_pair(rcvbuf=64 * 1024)
        io = SocketIO(server.socket, RequestParser(8192, 100), 30.0, read_cap=1 << 16)
        with trio.move_on_after(0.3) as scope:
            await io.write(payload(32 * MIB, 2))  # nobody reads: it waits, then is cancelled
        assert scope.cancelled_caught
        assert server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        await server.aclose()
        await client.aclose()


async def test_a_unix_socket_has_no_mark_and_writes_as_before() -> None:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    data = payload(4 * MIB, 3)
    try:
        with trio.fail_after(20):
            io = SocketIO(ours, RequestParser(8192, 100), 5.0, read_cap=1 << 16)
            peer = trio.SocketStream(trio.socket.from_stdlib_socket(theirs))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(io.write, data)
                assert await read_exactly(peer, len(data)) == data
    finally:
        ours.close()
        theirs.close()


async def test_a_head_and_body_written_as_a_pair_keep_their_order_whatever_the_socket_takes() -> (
    None
):
    head, body = b"HEAD\r\n\r\n", payload(3 * MIB, 4)
    first = payload(6 * MIB, 5)
    with trio.fail_after(20):
        server, client = await tcp_pair(rcvbuf=64 * 1024)
        io = SocketIO(server.socket, RequestParser(8192, 100), 10.0, read_cap=1 << 16)
        async with trio.open_nursery() as nursery:
            # Behind a write in progress (it holds the lock: nobody reads yet).
            nursery.start_soon(io.write, first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(io.write_pair, head, body)
            await trio.testing.wait_all_tasks_blocked()
            got = await read_exactly(client, len(first) + len(head) + len(body))
        assert got == first + head + body
        # Into a socket so full that not even the head goes at once.
        filler, piece = bytearray(), payload(1 << 16, 6)
        while True:
            try:
                filler += piece[: os.write(server.socket.fileno(), piece)]
            except BlockingIOError:
                break
        async with trio.open_nursery() as nursery:
            nursery.start_soon(io.write_pair, head, body)
            got = await read_exactly(client, len(filler) + len(head) + len(body))
        assert got == bytes(filler) + head + body
        assert server.socket.getsockopt(socket.IPPROTO_TCP, LOW_WATER) == TRIO_LOW_WATER
        await server.aclose()
        await client.aclose()


# -- through the HTTP server ----------------------------------------------------------------


async def big_body(request: HttpRequest, exchange: Exchange) -> None:
    """A reply of as many MiB as the path says (/<n>), bytes that differ everywhere."""
    size = int(request.path.strip("/"))
    await exchange.respond(200, payload(size, size), content_type="application/octet-stream")


async def read_response(stream: trio.SocketStream, *, piece: int, pause: float) -> bytes:
    """One Content-Length response's body, read ``piece`` bytes at a time with a pause now
    and then (a client slower than the server)."""
    rng = random.Random(piece)
    data = bytearray()
    while (end := data.find(b"\r\n\r\n")) < 0:
        data += await stream.receive_some(piece)
    head = bytes(data[:end]).lower()
    assert head.startswith(b"http/1.1 200 ok"), head
    length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
    body = data[end + 4 :]
    while len(body) < length:
        more = await stream.receive_some(piece)
        assert more, f"closed after {len(body)} of {length} bytes"
        body += more
        if rng.random() < 0.02:
            await trio.sleep(pause)
    assert len(body) == length
    return bytes(body)


async def test_big_replies_reach_a_slow_reader_byte_exact() -> None:
    sizes = [3 * MIB + 11, 100_000, 5 * MIB]
    with trio.fail_after(60):
        async with driver(big_body) as address:
            server_side = trio.socket.socket()
            server_side.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
            await server_side.connect(address)
            stream = trio.SocketStream(server_side)
            for size in sizes:  # one keep-alive connection
                await stream.send_all(post(f"/{size}"))
                got = await read_response(stream, piece=4096, pause=0.005)
                assert got == payload(size, size)
            await stream.aclose()


# -- a Server over HTTP: resources/read of big text --------------------------------------------


def big_text(size: int) -> str:
    """``size`` characters that differ everywhere (hex digits of random bytes)."""
    return payload(size // 2 + 1, size).hex()[:size]


def make_server(**limits: Any) -> Server:
    app = Server("big-replies", "1.0.0", limits=Limits(**limits))

    @app.resource("mem://text/{size}", mime_type="text/plain")
    def text(size: str) -> str:
        """``size`` characters of text."""
        return big_text(int(size))

    return app


def read_request(request_id: int, size: int) -> bytes:
    uri = f"mem://text/{size}"
    body = json.dumps(modern(request_id, "resources/read", {"uri": uri})).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in modern_headers("resources/read", uri).items())
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{head}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def read_text(reply: bytes, request_id: int) -> str:
    message = json.loads(reply)
    assert message["id"] == request_id, message.get("error")
    text: str = message["result"]["contents"][0]["text"]
    return text


@asynccontextmanager
async def serving(app: Server) -> AsyncIterator[tuple[tuple[str, int], trio.Event]]:
    """Serve ``app`` over HTTP; yields its address and an event set once serving ended."""
    ended = trio.Event()
    async with trio.open_nursery() as nursery:

        async def serve(task_status: trio.TaskStatus[Any]) -> None:
            try:
                await app.serve_http(0, task_status=task_status)
            finally:
                ended.set()

        address = await nursery.start(serve)
        yield address[:2], ended
        app.shutdown()


async def small_read_works(address: tuple[str, int]) -> None:
    stream = await trio.open_tcp_stream(*address)
    await stream.send_all(read_request(7, 10))
    assert read_text(await read_response(stream, piece=65536, pause=0), 7) == big_text(10)
    await stream.aclose()


async def test_a_resources_read_of_megabytes_reaches_a_slow_reader_whole() -> None:
    app = make_server()
    with trio.fail_after(60):
        async with serving(app) as (address, _):
            client = trio.socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
            await client.connect(address)
            stream = trio.SocketStream(client)
            for request_id, size in ((1, 2 * MIB), (2, 1000), (3, 4 * MIB + 3)):
                await stream.send_all(read_request(request_id, size))
                reply = await read_response(stream, piece=3000, pause=0.002)
                assert read_text(reply, request_id) == big_text(size)
            await stream.aclose()


async def test_a_client_that_hangs_up_mid_reply_costs_only_its_connection() -> None:
    app = make_server()
    with trio.fail_after(30):
        async with serving(app) as (address, ended):
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(read_request(1, 24 * MIB))
            assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 200 OK")
            await trio.sleep(0.3)  # it reads no more: the server's write waits meanwhile
            await small_read_works(address)  # others are served while it waits
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            await stream.aclose()  # hangs up (a reset) mid-reply
            await trio.sleep(0.1)
            for _ in range(3):
                await small_read_works(address)
            assert not ended.is_set()


async def test_a_client_that_stops_reading_is_cut_after_the_write_timeout() -> None:
    app = make_server(write_timeout=0.5)
    with trio.fail_after(30):
        async with serving(app) as (address, ended):
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(read_request(1, 24 * MIB))
            started = trio.current_time()
            await trio.sleep(1.5)  # reads nothing: the write times out, the server closes
            with trio.move_on_after(10):
                while await stream.receive_some(1 << 20):  # what the kernel holds, then EOF
                    pass
            assert trio.current_time() - started < 5
            await small_read_works(address)
            assert not ended.is_set()
            await stream.aclose()


async def test_shutdown_while_a_big_reply_is_blocked_ends_the_server_within_its_grace() -> None:
    app = make_server(shutdown_grace=0.3)
    with trio.fail_after(30):
        async with serving(app) as (address, ended):
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(read_request(1, 24 * MIB))
            assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 200 OK")
            await trio.sleep(0.3)  # the server's write waits for this client to read
            started = trio.current_time()
            app.shutdown()
            await ended.wait()
            # The grace and the one second after it (transports/http/_serve.py), not the
            # 30 s write timeout.
            assert trio.current_time() - started < 3
            await stream.aclose()
