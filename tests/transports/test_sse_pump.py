"""The SSE pump (runtime.transports.http._streams.pump): keep-alive ticks, not a timer per
event, and a tick never cuts an event in half (issue 22, fan-out)."""

from __future__ import annotations

import trio
import trio.testing

from runtime.transports.http._exchange import Exchange
from runtime.transports.http._http11 import RequestHead
from runtime.transports.http._streams import ResponseStream, pump

KEEPALIVE = b": keep-alive\n\n"


class _Socket:
    """An HTTP connection whose socket takes ``room`` bytes at once, then drains slowly."""

    def __init__(self, room: int = 1 << 20, drain: float = 0.0) -> None:
        self.room = room
        self.drain = drain
        self.wire = bytearray()
        self.log: list[tuple[float, bytes]] = []

    async def write(self, data: bytes) -> None:
        rest = self.write_now(data)
        if rest is not None:
            await self.write_rest(rest)

    def write_now(self, data: bytes) -> memoryview | None:
        taken = min(self.room, len(data))
        self.wire += data[:taken]
        self.log.append((trio.current_time(), bytes(data[:taken])))
        return None if taken == len(data) else memoryview(data)[taken:]

    async def write_rest(self, rest: memoryview) -> None:
        await trio.sleep(self.drain)  # slower than a keep-alive tick
        self.wire += rest
        self.log.append((trio.current_time(), bytes(rest)))

    async def watch(self) -> bool:
        await trio.sleep_forever()  # the client neither sends nor hangs up

    def abort(self) -> None:
        raise AssertionError("not aborted here")


def _exchange(sock: _Socket) -> Exchange:
    head = RequestHead(
        "GET", "/mcp", "/mcp", {}, (1, 0), (), {}, None, True, False
    )  # HTTP/1.0: unchunked
    return Exchange(sock, head)


async def test_a_quiet_stream_gets_one_keep_alive_per_tick_and_a_busy_one_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # virtual time
        await _quiet_then_busy()


async def _quiet_then_busy() -> None:
    sock = _Socket()
    stream = ResponseStream("g0")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump, _exchange(sock), stream, 1.0)
        await trio.sleep(3.5)  # quiet: ticks at 1, 2, 3
        assert sock.wire == KEEPALIVE * 3
        for n in range(20):  # an event every 0.25 s for 5 s: never quiet for a whole tick
            stream.push(f"g0_{n}", b"{}")
            await trio.sleep(0.25)
        stream.finish()
    assert sock.wire.count(KEEPALIVE) == 3
    assert sock.wire.endswith(b"id: g0_19\ndata: {}\n\n")
    # Quiet again after the last event: the next tick that saw none sends one, within
    # two keep-alive intervals of the last byte.
    sock2 = _Socket()
    stream2 = ResponseStream("g1")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump, _exchange(sock2), stream2, 1.0)
        await trio.sleep(0.9)
        pushed = trio.current_time()
        stream2.push(None, b"{}")
        await trio.sleep(2.2)
        stream2.finish()
    times = [t for t, data in sock2.log if data == KEEPALIVE]
    assert times and 1.0 <= times[0] - pushed <= 2.0


async def test_a_tick_does_not_cut_an_event_the_socket_takes_slowly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # virtual time
        await _slow_socket()


async def _slow_socket() -> None:
    sock = _Socket(room=10, drain=2.5)
    stream = ResponseStream("g0")
    data = b'{"jsonrpc":"2.0","method":"notifications/resources/updated"}'
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump, _exchange(sock), stream, 1.0)
        stream.push("g0_1", data)
        await trio.sleep(5)
        stream.finish()
    event = b"id: g0_1\ndata: " + data + b"\n\n"
    assert bytes(sock.wire).startswith(event)  # whole, with no keep-alive inside it
    assert bytes(sock.wire[len(event) :]) in (b"", KEEPALIVE, KEEPALIVE * 2)


async def test_events_written_straight_from_push_stay_whole_and_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # virtual time
        sock = _Socket(room=10, drain=2.5)
        stream = ResponseStream("g0")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, _exchange(sock), stream, 1.0)
            await trio.sleep(0.5)  # the pump waits with nothing queued
            assert stream.direct is not None
            for n in range(1, 4):
                stream.push(f"g0_{n}", b'{"n":%d}' % n)
            # The first went to the socket from push itself (part of it: the rest is the
            # pump's); the others queue behind it.
            assert sock.wire == b"id: g0_1\nd"
            await trio.sleep(10)
            stream.finish()
        events = b"".join(b'id: g0_%d\ndata: {"n":%d}\n\n' % (n, n) for n in range(1, 4))
        assert bytes(sock.wire).startswith(events)
        assert bytes(sock.wire[len(events) :]).replace(KEEPALIVE, b"") == b""


async def test_a_pump_that_waits_writes_a_push_without_being_woken(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # virtual time
        sock = _Socket()
        stream = ResponseStream("g0")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, _exchange(sock), stream, 1.0, 4)  # replayed up to 4
            await trio.sleep(0.5)
            stream.push("g0_4", b"{}")  # skipped: the client has it
            stream.push("g0_5", b"{}")
            assert sock.wire == b"id: g0_5\ndata: {}\n\n"  # before the pump ran again
            stream.finish()


async def test_an_idle_pump_holds_no_queue_and_queues_again_when_it_must(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Issue 22 item 4: once the queue is drained the waiting pump holds no memory-channel
    pair; messages that must queue again (the socket slow) get a new one, delivered whole
    and in order, and the stream still ends when finished."""
    with trio.fail_after(60):  # virtual time
        sock = _Socket(drain=2.5)
        stream = ResponseStream("g0")
        stream.push("g0_1", b'{"n":1}')  # queued before the pump runs
        assert stream._channel is not None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, _exchange(sock), stream, 100.0)  # (no keep-alive here)
            await trio.sleep(1)  # written, then idle
            assert stream.direct is not None and stream._channel is None
            sock.room = 10  # the socket is slow from now on
            for n in range(2, 5):  # the first goes straight out in part; the rest queue
                stream.push(f"g0_{n}", b'{"n":%d}' % n)
            assert stream._channel is not None
            await trio.sleep(20)
            assert stream.direct is not None and stream._channel is None
            stream.finish()
        events = b"".join(b'id: g0_%d\ndata: {"n":%d}\n\n' % (n, n) for n in range(1, 5))
        assert bytes(sock.wire) == events


async def test_a_wake_up_ends_the_tick_early_without_a_keep_alive(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The idle pump's socket watch is woken by ending its keep-alive tick early (no cancel
    scope of its own per idle stream, issue 22 item 4): a tick ended so, before its deadline,
    writes no keep-alive; later quiet ticks still do."""
    with trio.fail_after(60):  # virtual time
        sock = _Socket()
        stream = ResponseStream("g0")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, _exchange(sock), stream, 1.0)
            await trio.sleep(0.5)
            stream.finish()  # wakes the pump mid-tick: it ends
        assert sock.wire == b""
        sock2 = _Socket()
        stream2 = ResponseStream("g1")
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, _exchange(sock2), stream2, 1.0)
            await trio.sleep(0.5)
            stream2._wake_waiter()  # a wake-up with nothing to write (as a stale _WAKE)
            await trio.sleep(2.2)  # then quiet: keep-alives on the new ticks' deadlines
            stream2.finish()
        times = [t - start for t, data in sock2.log if data == KEEPALIVE]
        assert sock2.wire == KEEPALIVE * 2 and times == [1.5, 2.5]
