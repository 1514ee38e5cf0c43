"""A 2026-07-28 listen's response written from one task (runtime.transports.http._listen,
issue 22 item 4): the publisher writes a change to the socket itself, the handler's wait
(``ListenStream.idle``) finishes what the socket did not take and sends a keep-alive after
a quiet tick, events stay whole and in order, and a failed write stops the listen."""

from __future__ import annotations

import contextlib

import trio
import trio.testing

from runtime.features import Broadcast, Change
from runtime.transports.http._exchange import Exchange
from runtime.transports.http._http11 import RequestHead
from runtime.transports.http._listen import ListenStream

KEEPALIVE = b": keep-alive\n\n"
ACK = b'{"ack":true}'
RESULT = b'{"result":{}}'


class _Socket:
    """An HTTP connection whose socket takes ``room`` bytes of each write at once and the
    rest after ``drain`` seconds; the client neither sends nor hangs up."""

    def __init__(self, room: int = 1 << 20, drain: float = 0.0) -> None:
        self.room = room
        self.drain = drain
        self.wire = bytearray()
        self.aborted = 0
        self.broken = False

    async def write(self, data: bytes) -> None:
        rest = self.write_now(data)
        if rest is not None:
            await self.write_rest(rest)

    def write_now(self, data: bytes) -> memoryview | None:
        if self.broken:
            raise trio.BrokenResourceError("gone")
        taken = min(self.room, len(data))
        self.wire += data[:taken]
        return None if taken == len(data) else memoryview(data)[taken:]

    async def write_rest(self, rest: memoryview) -> None:
        await trio.sleep(self.drain)
        self.wire += rest

    async def watch(self) -> bool:
        await trio.sleep_forever()

    def abort(self) -> None:
        self.aborted += 1


def _exchange(sock: _Socket, version: tuple[int, int] = (1, 0)) -> Exchange:
    head = RequestHead(
        "POST", "/mcp", "/mcp", {}, version, (), {}, None, True, False
    )  # HTTP/1.0 (default): the SSE bytes unchunked
    return Exchange(sock, head)


def _chunks(body: bytes) -> list[bytes]:
    """An HTTP/1.1 chunked body's chunks, strictly parsed (through the last, empty one)."""
    chunks = []
    while True:
        size, sep, body = body.partition(b"\r\n")
        assert sep and size, body
        n = int(size, 16)
        assert body[n : n + 2] == b"\r\n", body
        if n == 0:
            assert body == b"\r\n"
            return chunks
        chunks.append(body[:n])
        body = body[n + 2 :]


def _event(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"


def _note(change: Change) -> bytes:
    return b'{"changed":"%s"}' % change[1].encode()


async def _listen(hub: Broadcast, stream: ListenStream, kinds: list[str]) -> None:
    """What the listen handler does with its peer (handlers/subscriptions.py), in short."""
    with hub.subscribe(kinds) as sub:  # type: ignore[arg-type]
        await stream.send(ACK)
        sub.take = lambda change: stream.send_now(_note(change), None)
        with contextlib.suppress(trio.EndOfChannel):
            while True:
                for change in await sub.receive(stream.idle):
                    await stream.send(_note(change))
    await stream.answer(RESULT, True, lambda reply: 200)


async def test_changes_go_out_whole_and_in_order_and_quiet_ticks_carry_keep_alives(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hub = Broadcast()
    sock = _Socket()
    with trio.fail_after(60):  # virtual time
        async with trio.open_nursery() as nursery:
            stream = ListenStream(_exchange(sock), True, 1.0, "c1")
            nursery.start_soon(_listen, hub, stream, ["tools", "prompts"])
            await trio.sleep(3.5)  # quiet: ticks at 1, 2, 3
            assert bytes(sock.wire).endswith(_event(ACK) + KEEPALIVE * 3)
            start = len(sock.wire)
            for _ in range(10):  # a change every 0.25 s: never quiet for a whole tick
                hub.list_changed("tools")
                await trio.sleep(0.25)
            assert bytes(sock.wire[start:]) == _event(b'{"changed":"tools"}') * 10
            hub.list_changed("prompts")
            hub.end_all()
    assert bytes(sock.wire).endswith(_event(b'{"changed":"prompts"}') + _event(RESULT))


async def test_a_change_the_socket_takes_slowly_is_finished_before_the_next_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The publisher writes what the socket takes; the rest is finished by the listen's
    wait, shielded from its keep-alive tick; a change published meanwhile waits its turn
    (declined by ``send_now``, sent by the handler) and nothing is interleaved."""
    hub = Broadcast()
    sock = _Socket()
    with trio.fail_after(60):  # virtual time
        async with trio.open_nursery() as nursery:
            stream = ListenStream(_exchange(sock), True, 1.0, "c1")
            nursery.start_soon(_listen, hub, stream, ["tools", "prompts"])
            await trio.testing.wait_all_tasks_blocked()
            start = len(sock.wire)
            sock.room, sock.drain = 5, 2.5  # slower than a tick
            hub.list_changed("tools")
            await trio.sleep(0.1)
            hub.list_changed("prompts")  # while the first one's rest is being written
            await trio.sleep(10)
            sock.room, sock.drain = 1 << 20, 0.0
            hub.end_all()
    written = bytes(sock.wire[start:])
    tools, prompts = _event(b'{"changed":"tools"}'), _event(b'{"changed":"prompts"}')
    assert written.startswith(tools + prompts), written
    assert written.endswith(_event(RESULT))
    assert set(written[len(tools + prompts) : -len(_event(RESULT))].split(KEEPALIVE)) <= {b""}


async def test_a_failed_write_stops_the_listen_with_its_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hub = Broadcast()
    sock = _Socket()
    with trio.fail_after(60):  # virtual time
        async with trio.open_nursery() as nursery:
            stream = ListenStream(_exchange(sock), True, 1.0, "c1")
            nursery.start_soon(_listen, hub, stream, ["tools"])
            await trio.testing.wait_all_tasks_blocked()
            sock.broken = True
            hub.list_changed("tools")  # declined by the publisher, met by the handler
            await trio.testing.wait_all_tasks_blocked()
            assert stream.broken and sock.aborted == 1
            await trio.sleep(5)  # no keep-alive attempted on a broken stream
            assert sock.aborted == 1
            nursery.cancel_scope.cancel()  # (what the connection's abort does)


async def test_a_client_that_takes_only_json_gets_the_result_alone() -> None:
    hub = Broadcast()
    sock = _Socket()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            stream = ListenStream(_exchange(sock), False, 1.0, "c1")
            nursery.start_soon(_listen, hub, stream, ["tools"])
            await trio.testing.wait_all_tasks_blocked()
            hub.list_changed("tools")  # dropped: no stream for this client
            await trio.testing.wait_all_tasks_blocked()
            assert bytes(sock.wire) == b""
            hub.end_all()
    head, _, body = bytes(sock.wire).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"application/json" in head
    assert body == RESULT


async def test_http11_each_change_is_one_chunk_of_one_whole_event(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """HTTP/1.1: the publisher frames a change's event and its chunk in one step
    (``send_now``, issue 22 item 3); the chunks are the same whether the socket took the
    change at once, or slowly (the rest finished by the listen's wait), or the handler
    sent it, and each chunk is exactly one event, in order."""
    hub = Broadcast()
    sock = _Socket()
    with trio.fail_after(60):  # virtual time
        async with trio.open_nursery() as nursery:
            stream = ListenStream(_exchange(sock, (1, 1)), True, 100.0, "c1")
            nursery.start_soon(_listen, hub, stream, ["tools", "prompts", "resources"])
            await trio.testing.wait_all_tasks_blocked()
            hub.list_changed("tools")  # taken whole at once
            await trio.sleep(0.1)
            sock.room, sock.drain = 7, 0.5
            hub.list_changed("prompts")  # 7 bytes now, the rest by the listen's wait
            await trio.sleep(0.1)
            hub.list_changed("resources")  # meanwhile: declined, sent by the handler
            await trio.sleep(2)
            sock.room, sock.drain = 1 << 20, 0.0
            hub.end_all()
    head, _, body = bytes(sock.wire).partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert _chunks(body) == [
        _event(ACK),
        _event(b'{"changed":"tools"}'),
        _event(b'{"changed":"prompts"}'),
        _event(b'{"changed":"resources"}'),
        _event(RESULT),
    ]
