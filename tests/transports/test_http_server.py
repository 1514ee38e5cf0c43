"""The HTTP driver: pipelining, hang-ups (a reader while an app waits), backpressure, upgrade."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from runtime.transports import EdgePolicy, HttpLimits
from runtime.transports.http._exchange import Exchange, HttpApp, HttpRequest
from runtime.transports.http._server import serve_http_listeners

App = Callable[[HttpRequest, Exchange], Awaitable[None]]


@asynccontextmanager
async def driver(
    app: App, *, on_upgrade: Any = None, max_body_size: int = 1 << 20
) -> AsyncIterator[tuple[str, int]]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:

        async def serve() -> None:
            await serve_http_listeners(
                listeners,
                app,
                policy=EdgePolicy(),
                limits=HttpLimits(),
                max_body_size=max_body_size,
                write_timeout=5.0,
                shutdown=shutdown,
                handler_nursery=nursery,
                on_upgrade=on_upgrade,
            )

        nursery.start_soon(serve)
        yield listeners[0].socket.getsockname()[:2]
        nursery.cancel_scope.cancel()


def post(path: str, body: bytes = b"{}") -> bytes:
    return b"POST %b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%b" % (
        path.encode(),
        len(body),
        body,
    )


async def read_until(stream: trio.SocketStream, count: int, marker: bytes) -> bytes:
    data = b""
    while data.count(marker) < count:
        more = await stream.receive_some(65536)
        assert more, data
        data += more
    return data


async def test_pipelined_requests_are_answered_in_order() -> None:
    async def app(request: HttpRequest, exchange: Exchange) -> None:
        if request.path == "/slow":
            await trio.sleep(0.2)  # the next requests arrive (and are buffered) meanwhile
        await exchange.respond(200, request.path.encode() + request.body, content_type="text/plain")

    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/slow", b"1") + post("/a", b"2") + post("/b", b"3"))
            data = await read_until(stream, 3, b"HTTP/1.1 200 ")
            while not data.endswith(b"/b3"):
                data += await stream.receive_some(65536)
            bodies = [part.rpartition(b"\r\n\r\n")[2] for part in data.split(b"HTTP/1.1 ")[1:]]
            assert bodies == [b"/slow1", b"/a2", b"/b3"]
            await stream.aclose()


async def test_big_bodies_arrive_whole_between_small_ones() -> None:
    """A body over WRITE_APART_OVER leaves after its head in a write of its own; on the wire
    it is the same response (Content-Length, the exact bytes), pipelined in order."""
    big = bytes(range(256)) * 12_000  # ~3 MiB, > WRITE_APART_OVER

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        body = big if request.path == "/big" else request.path.encode()
        await exchange.respond(200, body, content_type="application/octet-stream")

    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/a") + post("/big") + post("/b"))
            data = b""
            while not data.endswith(b"/b"):
                more = await stream.receive_some(1 << 20)
                assert more, data[-200:]
                data += more
            await stream.aclose()
    _head, rest = data.split(b"\r\n\r\n", 1)
    assert rest.startswith(b"/aHTTP/1.1 200 ")
    head, rest = rest[2:].split(b"\r\n\r\n", 1)
    assert b"content-length: %d" % len(big) in head.lower()
    assert rest[: len(big)] == big
    assert rest[len(big) :].startswith(b"HTTP/1.1 200 ") and rest.endswith(b"\r\n\r\n/b")


async def test_hanging_up_mid_request_cancels_it_and_closes() -> None:
    seen: list[str] = []
    served = trio.Event()
    done = trio.Event()

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        with trio.CancelScope() as scope:
            exchange.cancel_on_disconnect(scope)
            served.set()
            await trio.sleep(30)
        exchange.forget(scope)
        seen.append("cancelled" if scope.cancelled_caught else "finished")
        seen.append("disconnected" if exchange.disconnected.is_set() else "connected")
        done.set()

    await _post_then_hang_up(app, served, done)
    assert seen == ["cancelled", "disconnected"]


async def test_an_app_waiting_for_the_hang_up_sees_it() -> None:
    served = trio.Event()
    done = trio.Event()

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        hang_up = exchange.disconnected  # asked for before the client hangs up
        assert not hang_up.is_set() and not exchange.hung_up_seen
        served.set()
        await hang_up.wait()
        assert exchange.hung_up_seen
        done.set()

    await _post_then_hang_up(app, served, done)


async def test_a_hang_up_is_seen_by_a_later_waiting_request_too() -> None:
    """The reader stops after a run of requests that did not wait; the next app that
    waits gets a new one, which sees the hang-up."""
    served = trio.Event()
    done = trio.Event()

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        if request.path != "/last":
            if request.path == "/first":
                await trio.sleep(0.01)  # waits: a reader starts
            await exchange.respond(200, b"ok", content_type="text/plain")
            return
        served.set()
        await exchange.disconnected.wait()
        done.set()

    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            for path in ["/first"] + ["/quick"] * 8:  # the reader stops after the 8th
                await stream.send_all(post(path))
                await read_until(stream, 1, b"\r\n\r\nok")
            await stream.send_all(post("/last"))
            await served.wait()
            await stream.aclose()
            await done.wait()


async def _post_then_hang_up(app: HttpApp, served: trio.Event, done: trio.Event) -> None:
    """POST to ``app``, hang up once it is serving the request, wait until it is done."""
    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/x"))
            await served.wait()
            await stream.aclose()
            await done.wait()


async def test_keep_alive_serves_many_requests_then_sees_eof() -> None:
    calls = 0

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        nonlocal calls
        calls += 1
        await exchange.respond(200, b"ok", content_type="text/plain")

    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            for _ in range(20):
                await stream.send_all(post("/x"))
                assert (await read_until(stream, 1, b"\r\n\r\nok")).startswith(b"HTTP/1.1 200 ")
            await stream.send_eof()
            assert await stream.receive_some(100) == b""  # the server closed too
            assert calls == 20


async def test_large_pipelined_bodies_are_read_with_backpressure() -> None:
    body = b"x" * 300_000

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        await trio.sleep(0.05)
        await exchange.respond(200, b"%d" % len(request.body), content_type="text/plain")

    with trio.fail_after(20):
        async with driver(app, max_body_size=len(body)) as address:
            stream = await trio.open_tcp_stream(*address)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(stream.send_all, post("/x", body) * 8)
                data = await read_until(stream, 8, b"\r\n\r\n300000")
            assert data.count(b"HTTP/1.1 200 ") == 8
            await stream.aclose()


async def test_upgrade_gets_the_raw_stream_and_buffered_bytes() -> None:
    got: list[bytes] = []

    async def on_upgrade(request: HttpRequest, stream: trio.SocketStream, extra: bytes) -> None:
        data = extra
        while len(data) < 10:  # the reader has stopped: this task reads the rest itself
            data += await stream.receive_some(100)
        got.append(data)
        await stream.send_all(b"upgraded")

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        raise AssertionError("not reached")

    with trio.fail_after(10):
        async with driver(app, on_upgrade=on_upgrade) as address:
            stream = await trio.open_tcp_stream(*address)
            head = (
                b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                b"Connection: Upgrade\r\n\r\n"
            )
            await stream.send_all(head + b"01234")
            await trio.sleep(0.1)
            await stream.send_all(b"56789")
            assert await stream.receive_some(100) == b"upgraded"
            assert got == [b"0123456789"]
            await stream.aclose()


async def _exchange_bytes(address: tuple[str, int], data: bytes, *, until_close: bool) -> bytes:
    stream = await trio.open_tcp_stream(*address)
    await stream.send_all(data)
    got = b""
    while True:
        more = await stream.receive_some(65536)
        if not more:
            break
        got += more
        if not until_close and b"\r\n\r\n" in got:
            head, _, rest = got.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            if len(rest) >= length:
                break
    await stream.aclose()
    return got


async def echo_app(request: HttpRequest, exchange: Exchange) -> None:
    await exchange.respond(200, request.method.encode() + b":" + request.body, content_type=None)


async def test_a_chunked_request_body_is_reassembled() -> None:
    with trio.fail_after(10):
        async with driver(echo_app) as address:
            data = await _exchange_bytes(
                address,
                b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n",
                until_close=False,
            )
            assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"POST:abcdefg")


async def test_expect_100_continue_gets_the_interim_response_before_the_body() -> None:
    with trio.fail_after(10):
        async with driver(echo_app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(
                b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                b"Expect: 100-continue\r\n\r\n"
            )
            assert await stream.receive_some(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
            await stream.send_all(b"hi")
            data = await read_until(stream, 1, b"POST:hi")
            assert data.startswith(b"HTTP/1.1 200 OK\r\n")
            await stream.aclose()


async def test_http_1_0_gets_one_answer_then_the_connection_closes() -> None:
    with trio.fail_after(10):
        async with driver(echo_app) as address:
            data = await _exchange_bytes(
                address, b"POST /x HTTP/1.0\r\nContent-Length: 1\r\n\r\nz", until_close=True
            )
            assert data.startswith(b"HTTP/1.1 200 OK\r\n")
            assert b"\r\nConnection: close\r\n" in data and data.endswith(b"POST:z")


async def test_head_gets_the_length_but_no_body() -> None:
    with trio.fail_after(10):
        async with driver(echo_app) as address:
            data = await _exchange_bytes(
                address,
                b"HEAD /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                until_close=True,
            )
            assert data.startswith(b"HTTP/1.1 200 OK\r\n")
            assert b"\r\nContent-Length: 5\r\n" in data and data.endswith(b"\r\n\r\n")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (
            b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            400,
        ),
        (b"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: a\r\n bad: fold\r\n\r\n", 400),
        (b"GET /x HTTP/3.0\r\nHost: a\r\n\r\n", 505),
        (b"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ],
)
async def test_protocol_errors_get_their_status_and_the_connection_closes(
    raw: bytes, status: int
) -> None:
    with trio.fail_after(10):
        async with driver(echo_app) as address:
            data = await _exchange_bytes(address, raw, until_close=True)
            assert data.startswith(b"HTTP/1.1 %d " % status)
            assert b"\r\nConnection: close\r\n" in data and b'"jsonrpc":"2.0"' in data


class _Spawns(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


async def test_answers_that_never_wait_spawn_no_task_and_waiting_ones_get_a_reader() -> None:
    async def app(request: HttpRequest, exchange: Exchange) -> None:
        if request.path == "/wait":
            await trio.sleep(0.01)
        await exchange.respond(200, b"ok", content_type="text/plain")

    spawns = _Spawns()
    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/x"))
            await read_until(stream, 1, b"\r\n\r\nok")  # the connection's task exists now
            trio.lowlevel.add_instrument(spawns)
            try:
                for _ in range(20):
                    await stream.send_all(post("/x"))
                    await read_until(stream, 1, b"\r\n\r\nok")
                assert spawns.count == 0
                for _ in range(3):
                    await stream.send_all(post("/wait"))
                    await read_until(stream, 1, b"\r\n\r\nok")
                assert spawns.count == 1  # the reader, kept while requests keep waiting
                for _ in range(12):  # stopped after 8 that did not; none started again
                    await stream.send_all(post("/x"))
                    await read_until(stream, 1, b"\r\n\r\nok")
                assert spawns.count == 1
                await stream.send_all(post("/wait"))
                await read_until(stream, 1, b"\r\n\r\nok")
                assert spawns.count == 2
            finally:
                trio.lowlevel.remove_instrument(spawns)
            await stream.aclose()


async def test_an_exchange_kept_past_its_connection_cannot_write_to_the_socket() -> None:
    # Its descriptor number may already belong to another client's connection.
    kept: list[Exchange] = []

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        kept.append(exchange)
        await exchange.start_stream(200, "text/event-stream")

    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(post("/x"))
            await read_until(stream, 1, b"\r\n\r\n")
            await stream.aclose()
            await trio.sleep(0.2)  # the server sees the hang-up and closes its side
            with pytest.raises(trio.ClosedResourceError):
                await kept[0].write(b"data: late\n\n")


async def test_a_bad_request_pipelined_behind_a_good_one_still_gets_its_400() -> None:
    with trio.fail_after(10):
        async with driver(echo_app) as address:
            data = await _exchange_bytes(
                address,
                post("/x", b"ok") + b"GET /y HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                until_close=True,
            )
            first, _, second = data.partition(b"POST:ok")
            assert first.startswith(b"HTTP/1.1 200 OK\r\n")
            assert second.startswith(b"HTTP/1.1 400 ") and b"exactly one Host" in second


class _Answer:
    """An awaitable that is no coroutine (``__await__`` of a generator): an app may return
    any awaitable, not only a coroutine."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange

    def __await__(self) -> Any:
        return self.exchange.respond(200, b"awaitable", content_type="text/plain").__await__()


async def test_every_kind_of_app_failure_and_awaitable_is_answered_and_the_connection_lives() -> (
    None
):
    from runtime.transports.http._exchange import HttpError

    def app(request: HttpRequest, exchange: Exchange) -> Awaitable[None]:
        if request.path == "/sync-error":  # raised before any coroutine exists
            raise HttpError(404, "Not Found")
        if request.path == "/awaitable":
            return _Answer(exchange)
        return coroutine(request, exchange)

    async def coroutine(request: HttpRequest, exchange: Exchange) -> None:
        if request.path == "/waits-then-fails":  # raised after the first step suspended
            await trio.sleep(0.01)
            raise HttpError(409, "Conflict")
        if request.path == "/crash":
            raise RuntimeError("boom")
        await exchange.respond(200, b"fine", content_type="text/plain")

    with trio.fail_after(10):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            answers = []
            for path in ["/sync-error", "/awaitable", "/waits-then-fails", "/fine"]:
                await stream.send_all(post(path))
                answers.append(await read_until(stream, 1, b"\r\n\r\n"))
            while not answers[-1].endswith(b"fine"):
                answers[-1] += await stream.receive_some(65536)
            assert answers[0].startswith(b"HTTP/1.1 404 ")
            assert b"Connection: close" not in answers[0]
            assert answers[1].startswith(b"HTTP/1.1 200 ")
            assert answers[2].startswith(b"HTTP/1.1 409 ")
            assert answers[3].startswith(b"HTTP/1.1 200 ")
            # An app that crashes gets a 500 without a traceback, and the connection closes.
            await stream.send_all(post("/crash"))
            data = b""
            while more := await stream.receive_some(65536):
                data += more
            assert data.startswith(b"HTTP/1.1 500 ") and b"Connection: close" in data
            assert b"Traceback" not in data and b"boom" not in data
            await stream.aclose()


async def test_whole_responses_a_full_socket_did_not_take_at_once_arrive_whole_in_order() -> None:
    # Each answer is under WRITE_APART_OVER (one byte string, written as far as the socket
    # takes it at once); the client reads nothing until all are sent, so the socket fills
    # and the rest of an answer is awaited before the next request is served.
    size = 60_000

    async def app(request: HttpRequest, exchange: Exchange) -> None:
        mark = request.path[1:].encode()
        await exchange.respond(200, mark * (size // len(mark)), content_type="text/plain")

    paths = [f"/{i:04d}" for i in range(120)]
    with trio.fail_after(20):
        async with driver(app) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(b"".join(post(path) for path in paths))
            await trio.sleep(0.3)  # let the server fill the socket and wait on it
            data = bytearray()
            for path in paths:
                mark = path[1:].encode()
                expected = b"Content-Length: %d\r\n\r\n%b" % (size, mark * (size // len(mark)))
                while data.find(expected) < 0:
                    more = await stream.receive_some(1 << 20)
                    assert more, path
                    data += more
                start = data.find(expected)
                assert data[:start].startswith(b"HTTP/1.1 200 OK\r\n")
                del data[: start + len(expected)]
            assert not data
            await stream.aclose()
