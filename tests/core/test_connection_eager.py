"""The supervisor's reader generations: requests that never wait run in the reader.

A request that finishes in its first step costs no task and no cancel scope of its own and
its reply is coalesced with its pipelined neighbours'; a request that suspends takes over
its reader generation (whose scope becomes its own) while a new generation reads on.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from runtime.core import Connection, Dispatcher, Limits, Outgoing, RequestContext, Session
from runtime.framing import FramingError, NdjsonFramer
from runtime.transports import FramedChannel

from ..wire import RawPeer

# -- harness --------------------------------------------------------------------------------


class CountingChannel(FramedChannel):
    """A FramedChannel that records how many messages each write carried."""

    def __init__(self, stream: trio.StapledStream[Any, Any]) -> None:
        super().__init__(stream, stream, NdjsonFramer())
        self.sends: list[int] = []

    async def send(self, messages: Sequence[tuple[bytes, object]]) -> None:
        self.sends.append(len(messages))
        await super().send(messages)


class PlainChannel:
    """A MessageChannel without ``ready_frame`` (like the HTTP session channel)."""

    def __init__(self, inner: FramedChannel) -> None:
        self._inner = inner
        self.sends: list[int] = []

    async def receive(self) -> bytes:
        return await self._inner.receive()

    async def send(self, messages: Sequence[Outgoing]) -> None:
        self.sends.append(len(messages))
        await self._inner.send(messages)

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class Harness:
    conn: Connection
    channel: CountingChannel | PlainChannel
    peer: RawPeer
    client: trio.StapledStream[Any, Any]
    done: trio.Event = field(default_factory=trio.Event)

    async def send_all(self, messages: list[Any]) -> None:
        """Write every message in one write: the server finds them all in one read."""
        await self.peer.send_bytes(
            b"".join(self.peer.frame(msgspec.json.encode(m)) for m in messages)
        )

    async def close_input(self) -> None:
        await self.client.send_stream.aclose()


@asynccontextmanager
async def serve(
    dispatcher: Dispatcher,
    *,
    limits: Limits | None = None,
    shutdown: trio.Event | None = None,
    drain_on_eof: bool = False,
    plain: bool = False,
) -> AsyncIterator[Harness]:
    client, server = trio.testing.memory_stream_pair()
    framed = CountingChannel(server)
    channel: CountingChannel | PlainChannel = PlainChannel(framed) if plain else framed
    conn = Connection(
        channel,
        dispatcher,
        limits=limits,
        session=Session("memory"),
        shutdown=shutdown,
        drain_on_eof=drain_on_eof,
    )
    harness = Harness(conn, channel, RawPeer(client, client, "ndjson"), client)

    async def run() -> None:
        await conn.serve()
        harness.done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        yield harness
        await client.send_stream.aclose()
        nursery.cancel_scope.deadline = trio.current_time() + 5


def call(request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def cancel(request_id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "test"},
    }


def note(method: str = "notifications/hello") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method}


def params_of(ctx: RequestContext) -> dict[str, Any]:
    return msgspec.json.decode(ctx.params) if ctx.params is not None else {}  # type: ignore[no-any-return]


@dataclass
class Log:
    started: list[Any] = field(default_factory=list)
    finished: list[Any] = field(default_factory=list)
    in_flight_seen: list[int] = field(default_factory=list)


def make_dispatcher(log: Log, **extra: Any) -> Dispatcher:
    async def quick(ctx: RequestContext) -> Any:
        log.in_flight_seen.append(ctx.peer.in_flight)  # type: ignore[attr-defined]
        return {"id": ctx.id}

    async def slow(ctx: RequestContext) -> Any:
        seconds = params_of(ctx).get("seconds", 30.0)
        log.started.append(ctx.id)
        try:
            await trio.sleep(seconds)
            return {"slept": ctx.id}
        finally:
            log.finished.append(ctx.id)

    return Dispatcher({"quick": quick, "slow": slow, **extra})


async def wait_started(log: Log, count: int) -> None:
    while len(log.started) < count:  # noqa: ASYNC110 - the handlers only append to a list
        await trio.sleep(0.001)


class SpawnCounter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.spawned = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned += 1


# -- the channel's side ----------------------------------------------------------------------


async def test_framed_channel_ready_frame_gives_only_frames_already_buffered() -> None:
    client, server = trio.testing.memory_stream_pair()
    channel = FramedChannel(server, server, NdjsonFramer(max_frame_size=16))
    with trio.fail_after(5):
        assert channel.ready_frame() is None
        await client.send_all(b'{"a":1}\n{"b":2}\n' + b"x" * 20 + b'\n{"c":')
        assert await channel.receive() == b'{"a":1}'
        assert channel.ready_frame() == b'{"b":2}'
        with pytest.raises(FramingError):
            channel.ready_frame()  # the over-long line, skipped
        assert channel.ready_frame() is None  # '{"c":' is not a whole frame yet
        await client.send_all(b"3}\n")
        await client.send_stream.aclose()
        assert await channel.receive() == b'{"c":3}'
        with pytest.raises(trio.EndOfChannel):
            await channel.receive()
        with pytest.raises(trio.EndOfChannel):
            channel.ready_frame()


# -- requests that never wait -----------------------------------------------------------------


async def test_requests_that_never_wait_spawn_no_task_and_are_never_in_flight() -> None:
    log = Log()
    counter = SpawnCounter()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            await h.peer.call("quick")  # the connection is up and reading
            trio.lowlevel.add_instrument(counter)
            try:
                await h.send_all([call(i, "quick") for i in range(64)])
                replies = [await h.peer.receive() for _ in range(64)]
            finally:
                trio.lowlevel.remove_instrument(counter)
    assert [r["result"]["id"] for r in replies] == list(range(64))
    assert counter.spawned == 0
    assert set(log.in_flight_seen) == {0}


async def test_pipelined_replies_leave_in_one_write() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            await h.send_all([call(i, "quick") for i in range(64)])
            replies = [await h.peer.receive() for _ in range(64)]
            assert [r["id"] for r in replies] == list(range(64))
            assert h.channel.sends == [64]


async def test_a_channel_without_ready_frame_writes_each_reply_at_once() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log), plain=True) as h:
            await h.send_all([call(i, "quick") for i in range(8)])
            replies = [await h.peer.receive() for _ in range(8)]
            assert [r["id"] for r in replies] == list(range(8))
            assert h.channel.sends == [1] * 8


async def test_a_partly_received_frame_does_not_hold_back_replies() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            whole = h.peer.frame(msgspec.json.encode(call(1, "quick")))
            half = h.peer.frame(msgspec.json.encode(call(2, "quick")))
            await h.peer.send_bytes(whole + half[:10])
            assert (await h.peer.receive())["id"] == 1
            await h.peer.send_bytes(half[10:])
            assert (await h.peer.receive())["id"] == 2


async def test_context_variables_set_by_one_request_do_not_leak_into_the_next() -> None:
    var: contextvars.ContextVar[Any] = contextvars.ContextVar("var", default="unset")

    async def sets(ctx: RequestContext) -> Any:
        seen = var.get()
        var.set(ctx.id)
        if params_of(ctx).get("wait"):
            await trio.sleep(0.01)
            assert var.get() == ctx.id
        return {"seen": seen}

    with trio.fail_after(5):
        async with serve(Dispatcher({"sets": sets})) as h:
            await h.send_all(
                [call(1, "sets"), call(2, "sets", wait=True), call(3, "sets"), call(4, "sets")]
            )
            replies = [await h.peer.receive() for _ in range(4)]
            await h.peer.send([call(5, "sets"), call(6, "sets", wait=True), call(7, "sets")])
            batch = await h.peer.receive()
    assert {r["result"]["seen"] for r in replies} == {"unset"}
    assert [r["result"]["seen"] for r in batch] == ["unset"] * 3


async def test_an_exception_below_the_dispatcher_does_not_stop_the_reader() -> None:
    class Broken(Dispatcher):
        async def dispatch(self, ctx: RequestContext) -> bytes:
            if ctx.method == "boom-now":
                raise RuntimeError("in the first step")
            if ctx.method == "boom-later":
                await trio.lowlevel.checkpoint()
                raise RuntimeError("after suspending")
            return await super().dispatch(ctx)

    log = Log()
    dispatcher = Broken(make_dispatcher(log).requests)
    with trio.fail_after(5):
        async with serve(dispatcher) as h:
            await h.peer.send(call(1, "boom-now"))
            assert (await h.peer.receive())["error"]["code"] == -32603
            await h.peer.send(call(2, "boom-later"))
            assert (await h.peer.receive())["error"]["code"] == -32603
            assert (await h.peer.call("quick"))["result"]
            assert h.conn.in_flight == 0


async def test_the_in_flight_cap_counts_only_requests_that_wait() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log), limits=Limits(max_in_flight=2)) as h:
            # Ten quick requests behind one that waits: none of them takes a slot.
            await h.send_all([call("s1", "slow")] + [call(i, "quick") for i in range(10)])
            replies = [await h.peer.receive() for _ in range(10)]
            assert [r["result"] for r in replies] == [{"id": i} for i in range(10)]
            assert h.conn.in_flight == 1
            # The cap is checked before a request starts (nobody can tell yet whether it
            # will wait), so at the cap quick requests are refused as well.
            await h.send_all([call("s2", "slow"), call("s3", "slow"), call("q", "quick")])
            for request_id in ("s3", "q"):
                refused = await h.peer.receive()
                assert refused["id"] == request_id and refused["error"]["code"] == -32010
            assert h.conn.in_flight == 2
            await h.peer.send(cancel("s2"))
            await trio.testing.wait_all_tasks_blocked()
            assert h.conn.in_flight == 1
            await h.send_all([call(0, "quick"), call("s1", "quick")])
            # An id may be reused once its request finished, not while it is in flight.
            again, duplicate = await h.peer.receive(), await h.peer.receive()
            assert again["result"] == {"id": 0}
            assert duplicate["id"] == "s1" and duplicate["error"]["code"] == -32600


# -- requests that suspend ------------------------------------------------------------------


async def test_a_suspended_request_takes_over_its_generation_and_reading_goes_on() -> None:
    log = Log()
    counter = SpawnCounter()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            await h.peer.call("quick")
            trio.lowlevel.add_instrument(counter)
            try:
                await h.send_all([call("s", "slow", seconds=0.2), call("q", "quick")])
                assert (await h.peer.receive())["id"] == "q"  # read and answered meanwhile
                assert h.conn.in_flight == 1
                assert (await h.peer.receive())["result"] == {"slept": "s"}
            finally:
                trio.lowlevel.remove_instrument(counter)
            assert h.conn.in_flight == 0
    # One new reader generation for the request that suspended, and nothing else.
    assert counter.spawned == 1


async def test_a_suspended_request_is_cancelled_by_the_client_and_its_finally_runs() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            await h.peer.send(call("victim", "slow"))
            await wait_started(log, 1)
            assert h.conn.in_flight == 1
            await h.send_all([cancel("victim"), call("after", "quick")])
            assert (await h.peer.receive())["id"] == "after"  # nothing for the victim
            assert log.finished == ["victim"]
            assert h.conn.in_flight == 0
            assert (await h.peer.call("quick"))["result"]


async def test_request_timeout_answers_a_suspended_request_while_quick_ones_go_on() -> None:
    log = Log()
    deadlines: list[float] = []

    async def deadline(ctx: RequestContext) -> Any:
        deadlines.append(trio.current_effective_deadline() - trio.current_time())
        return {}

    with trio.fail_after(5):
        async with serve(
            make_dispatcher(log, deadline=deadline), limits=Limits(request_timeout=0.2)
        ) as h:
            await h.peer.send(call("s", "slow"))
            await wait_started(log, 1)
            assert (await h.peer.call("quick"))["result"]
            timed_out = await h.peer.receive()
            assert timed_out["id"] == "s"
            assert timed_out["error"]["code"] == -32001
            assert timed_out["error"]["data"] == {"timeoutSeconds": 0.2}
            assert log.finished == ["s"]
            # The reader's scope carried only each request's own deadline: long after it,
            # reading goes on, and the next request sees a fresh deadline of its own.
            await trio.sleep(0.3)
            assert (await h.peer.call("deadline"))["result"] == {}
            assert (await h.peer.call("quick"))["result"]
    assert len(deadlines) == 1 and 0.1 < deadlines[0] <= 0.2


async def test_a_first_step_that_outlasts_its_timeout_leaves_later_requests_alone() -> None:
    log = Log()

    async def busy(ctx: RequestContext) -> Any:
        time.sleep(0.15)  # noqa: ASYNC251 - a first step that never yields, past its deadline
        assert ctx.cancel_scope is not None and ctx.cancel_scope.cancel_called
        return {"busy": ctx.id}

    with trio.fail_after(5):
        async with serve(make_dispatcher(log, busy=busy), limits=Limits(request_timeout=0.1)) as h:
            await h.send_all([call(1, "busy"), call(2, "slow", seconds=0.01)])
            assert (await h.peer.receive())["result"] == {"busy": 1}
            assert (await h.peer.receive())["result"] == {"slept": 2}
            await h.peer.send([call(3, "busy"), call(4, "slow", seconds=0.01), call(5, "quick")])
            batch = await h.peer.receive()
            assert [r["result"] for r in batch] == [{"busy": 3}, {"slept": 4}, {"id": 5}]


async def test_server_to_client_requests_work_from_any_request() -> None:
    async def ask(ctx: RequestContext) -> Any:
        return await ctx.peer.request("ping", timeout=5)

    with trio.fail_after(5):
        async with serve(Dispatcher({"ask": ask})) as h:
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()
            assert asked["method"] == "ping"
            await h.peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"pong": 1}})
            assert (await h.peer.receive())["result"] == {"pong": 1}


async def test_start_soon_from_a_request_that_never_waits() -> None:
    ran = trio.Event()

    async def spawn(ctx: RequestContext) -> Any:
        async def later() -> None:
            ran.set()

        ctx.peer.start_soon(later)
        return {}

    with trio.fail_after(5):
        async with serve(Dispatcher({"spawn": spawn})) as h:
            assert (await h.peer.call("spawn"))["result"] == {}
            await ran.wait()


# -- batches --------------------------------------------------------------------------------


async def test_a_batch_mixing_quick_and_slow_items_keeps_order_and_isolation() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log), limits=Limits(request_timeout=0.3)) as h:
            await h.peer.send(
                [
                    call(1, "quick"),
                    call(2, "slow", seconds=0.05),
                    call(3, "quick"),
                    call(4, "slow"),  # times out
                    note(),
                    call(5, "slow", seconds=0.01),
                    call(6, "nope"),
                    {"jsonrpc": "2.0", "id": 7},
                    call(8, "quick"),
                ]
            )
            # Reading went on past the batch while its slow items ran.
            await h.peer.send(call("after", "quick"))
            assert (await h.peer.receive())["id"] == "after"
            batch = await h.peer.receive()
            assert [r["id"] for r in batch] == [1, 2, 3, 4, 5, 6, 7, 8]
            by_id = {r["id"]: r for r in batch}
            assert by_id[2]["result"] == {"slept": 2}
            assert by_id[4]["error"]["code"] == -32001
            assert by_id[5]["result"] == {"slept": 5}
            assert by_id[6]["error"]["code"] == -32601
            assert by_id[7]["error"]["code"] == -32600
            assert by_id[8]["result"] == {"id": 8}
            assert sorted(log.finished) == [2, 4, 5]
            assert h.conn.in_flight == 0


async def test_a_cancelled_batch_item_is_left_out_and_spoils_nothing() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            await h.peer.send(
                [call("a", "slow"), call("b", "slow", seconds=0.1), call("c", "quick")]
            )
            await wait_started(log, 2)
            await h.peer.send(cancel("a"))
            batch = await h.peer.receive()
            assert [r["id"] for r in batch] == ["b", "c"]
            assert sorted(log.finished) == ["a", "b"]


async def test_a_batch_of_quick_items_and_notifications() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log)) as h:
            await h.send_all(
                [
                    [note(), note()],  # no reply at all
                    [call(1, "quick"), note(), call(2, "quick")],
                    [],
                ]
            )
            batch = await h.peer.receive()
            assert [r["id"] for r in batch] == [1, 2]
            empty = await h.peer.receive()
            assert empty["error"]["code"] == -32600
            assert h.channel.sends == [2]


# -- end of input and shutdown ----------------------------------------------------------------


async def test_eof_grace_applies_to_suspended_requests() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log), limits=Limits(eof_grace=0.3)) as h:
            await h.peer.send(call("short", "slow", seconds=0.1))
            await h.peer.send(call("long", "slow"))
            await h.peer.send(call("q", "quick"))
            assert (await h.peer.receive())["id"] == "q"
            await h.close_input()
            begun = trio.current_time()
            assert (await h.peer.receive())["id"] == "short"
            await h.done.wait()
            assert 0.25 < trio.current_time() - begun < 2
            assert h.conn.close_reason == "eof"
    assert sorted(log.finished) == ["long", "short"]


async def test_drain_on_eof_waits_for_suspended_requests() -> None:
    log = Log()
    with trio.fail_after(5):
        async with serve(
            make_dispatcher(log), limits=Limits(eof_grace=0.01), drain_on_eof=True
        ) as h:
            await h.send_all([call("s", "slow", seconds=0.2), call("q", "quick")])
            await h.close_input()
            assert (await h.peer.receive())["id"] == "q"
            assert (await h.peer.receive())["result"] == {"slept": "s"}
            await h.done.wait()


async def test_shutdown_stops_reading_and_grants_suspended_requests_their_grace() -> None:
    log = Log()
    shutdown = trio.Event()
    with trio.fail_after(5):
        async with serve(
            make_dispatcher(log), limits=Limits(shutdown_grace=0.4), shutdown=shutdown
        ) as h:
            await h.send_all(
                [call("short", "slow", seconds=0.1), call("long", "slow"), call("q", "quick")]
            )
            assert (await h.peer.receive())["id"] == "q"
            await wait_started(log, 2)
            await trio.testing.wait_all_tasks_blocked()
            begun = trio.current_time()
            shutdown.set()
            assert (await h.peer.receive())["id"] == "short"
            await h.done.wait()
            assert 0.35 < trio.current_time() - begun < 2
            assert h.conn.close_reason == "shutdown"
    assert sorted(log.finished) == ["long", "short"]


async def test_shutdown_before_any_input_ends_the_connection() -> None:
    log = Log()
    shutdown = trio.Event()
    shutdown.set()
    with trio.fail_after(5):
        async with serve(make_dispatcher(log), shutdown=shutdown) as h:
            await h.done.wait()
            assert h.conn.close_reason == "shutdown"


class StubbornChannel:
    """A MessageChannel whose reads finish even when cancelled (shielded), as a read that
    completes in the same instant shutdown cancels it would."""

    def __init__(self) -> None:
        self.inbound_send, self._inbound = trio.open_memory_channel[bytes](16)
        self.outbound, self._replies = trio.open_memory_channel[bytes](16)

    async def receive(self) -> bytes:
        with trio.CancelScope(shield=True):
            return await self._inbound.receive()

    async def send(self, messages: Sequence[Outgoing]) -> None:
        for data, _ in messages:
            await self.outbound.send(data)

    async def aclose(self) -> None:
        self._inbound.close()

    async def reply(self) -> Any:
        return msgspec.json.decode(await self._replies.receive())


async def test_a_frame_read_as_shutdown_cancels_the_read_runs_outside_the_cancelled_scope() -> None:
    log = Log()
    shutdown = trio.Event()
    channel = StubbornChannel()
    conn = Connection(
        channel,
        make_dispatcher(log),
        limits=Limits(shutdown_grace=2.0),
        session=Session("memory"),
        shutdown=shutdown,
    )
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.serve)
            await trio.testing.wait_all_tasks_blocked()
            shutdown.set()  # the reader is waiting: its scope is cancelled
            await trio.testing.wait_all_tasks_blocked()
            # ... but its read completes anyway, with a request that waits.
            await channel.inbound_send.send(msgspec.json.encode(call("s", "slow", seconds=0.1)))
            # It runs in a fresh scope with the shutdown grace, instead of being cancelled
            # at once and answered as timed out.
            assert (await channel.reply())["result"] == {"slept": "s"}
    assert conn.close_reason == "shutdown"


async def test_shutdown_interrupts_a_notification_handler_as_it_would_a_read() -> None:
    log = Log()
    shutdown = trio.Event()
    cancelled = trio.Event()

    async def stuck(ctx: RequestContext) -> None:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    dispatcher = make_dispatcher(log)
    dispatcher.notifications["notifications/stuck"] = stuck
    with trio.fail_after(5):
        async with serve(dispatcher, limits=Limits(shutdown_grace=2.0), shutdown=shutdown) as h:
            await h.send_all([call("s", "slow", seconds=0.2), note("notifications/stuck")])
            await wait_started(log, 1)
            await trio.testing.wait_all_tasks_blocked()
            shutdown.set()
            await cancelled.wait()
            # The request that suspended earlier is not the reader any more: it gets its
            # grace and answers.
            assert (await h.peer.receive())["result"] == {"slept": "s"}
            await h.done.wait()
            assert h.conn.close_reason == "shutdown"
