"""A connection whose channel is read only while it has input (``receive_nowait``) is served
in rounds: idle, it holds no task, nursery or cancel scope (issue 22 item 4, the handshake-era
HTTP session), and input, a task to start, shutdown or its end bring a round back."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
import trio

from runtime.core import Connection, Dispatcher, Outgoing, RequestContext, Session


class RoundChannel:
    """Input queued by the test; ``wake()`` starts a round of ``serve`` in ``nursery``."""

    def __init__(self) -> None:
        self.items: list[bytes] = []
        self.closed = False
        self.sent: list[dict[str, Any]] = []
        self.wakes = 0
        self.rounds = 0
        self.connection: Connection | None = None
        self.nursery: trio.Nursery | None = None
        self.idle = trio.Event()

    def feed(self, message: dict[str, Any]) -> None:
        self.items.append(msgspec.json.encode(message))
        assert self.connection is not None
        self.connection.resume()

    def close_input(self) -> None:
        self.closed = True
        assert self.connection is not None
        self.connection.resume()

    async def receive(self) -> bytes:
        raise AssertionError("a channel with receive_nowait is never waited on")

    def receive_nowait(self) -> bytes:
        if self.items:
            return self.items.pop(0)
        if self.closed:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    def wake(self) -> None:
        self.wakes += 1
        assert self.connection is not None
        self.start_round(self.connection.serve)

    def start_round(self, serve: Any) -> None:
        assert self.nursery is not None
        self.idle = trio.Event()
        self.nursery.start_soon(self.round, serve, self.idle)

    async def round(self, serve: Any, idle: trio.Event) -> None:
        self.rounds += 1
        await serve()
        idle.set()

    async def send(self, messages: Sequence[Outgoing]) -> None:
        self.sent.extend(msgspec.json.decode(data) for data, _ in messages)

    def send_now(self, messages: Sequence[Outgoing]) -> None:
        self.sent.extend(msgspec.json.decode(data) for data, _ in messages)

    async def aclose(self) -> None:
        pass


def make_dispatcher(log: list[str]) -> Dispatcher:
    async def quick(ctx: RequestContext) -> Any:
        return {"id": ctx.id}

    async def slow(ctx: RequestContext) -> Any:
        log.append(f"start {ctx.id}")
        try:
            await trio.sleep(0.05 if ctx.id != "long" else 30)
        except trio.Cancelled:
            log.append(f"cancelled {ctx.id}")
            raise
        return {"slept": ctx.id}

    return Dispatcher({"quick": quick, "slow": slow})


def call(request_id: Any, method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method}


def tasks_under(nursery: trio.Nursery) -> int:
    count, stack = 0, list(nursery.child_tasks)
    while stack:
        task = stack.pop()
        count += 1
        for child in task.child_nurseries:
            stack.extend(child.child_tasks)
    return count


async def open_rounds(log: list[str], nursery: trio.Nursery) -> tuple[Connection, RoundChannel]:
    channel = RoundChannel()
    channel.nursery = nursery
    channel.items.append(msgspec.json.encode(call(1, "quick")))
    connection = Connection(channel, make_dispatcher(log), session=Session("memory"))
    channel.connection = connection
    channel.start_round(connection.serve)
    await channel.idle.wait()
    return connection, channel


async def test_a_round_ends_when_its_input_is_read_and_input_brings_another() -> None:
    log: list[str] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            connection, channel = await open_rounds(log, nursery)
            # The first round answered and returned: the connection lives on, idle.
            assert channel.sent == [{"jsonrpc": "2.0", "id": 1, "result": {"id": 1}}]
            assert not connection.ended and tasks_under(nursery) == 0
            # A request that suspends runs in a round that lasts until it is answered.
            channel.feed(call(2, "slow"))
            assert channel.wakes == 1
            await trio.testing.wait_all_tasks_blocked()
            assert log == ["start 2"] and tasks_under(nursery) > 0
            await channel.idle.wait()
            assert channel.sent[-1]["result"] == {"slept": 2}
            assert tasks_under(nursery) == 0 and channel.rounds == 2
            # Input fed while a round serves is read in that round (no second wake).
            channel.feed(call(3, "slow"))
            await trio.testing.wait_all_tasks_blocked()
            channel.feed(call(4, "quick"))
            assert channel.wakes == 2
            await channel.idle.wait()
            assert [m["id"] for m in channel.sent[-2:]] == [4, 3]
            channel.close_input()
            await channel.idle.wait()
            assert connection.ended and connection.close_reason == "eof"


async def test_a_cancellation_fed_to_an_idle_connection_reaches_a_running_request() -> None:
    """``notifications/cancelled`` read in a round of its own cancels a request that a
    run_request runs in another task (a session POST's own task)."""
    log: list[str] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            connection, channel = await open_rounds(log, nursery)
            replies: list[bytes | None] = []

            async def post() -> None:
                from runtime.protocol import decode_frame

                env = decode_frame(msgspec.json.encode(call("long", "slow")))
                replies.append(await connection.run_request(env))  # type: ignore[arg-type]

            nursery.start_soon(post)
            await trio.testing.wait_all_tasks_blocked()
            assert log == ["start long"] and connection.in_flight == 1
            cancel = {"requestId": "long", "reason": "test"}
            channel.feed({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            await trio.testing.wait_all_tasks_blocked()
            assert log == ["start long", "cancelled long"] and replies == [None]
            assert tasks_under(nursery) == 0 and not connection.ended
            channel.close_input()


async def test_start_soon_while_idle_runs_in_a_round_and_stop_reading_ends_an_idle_one() -> None:
    log: list[str] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            connection, channel = await open_rounds(log, nursery)
            closed: list[str] = []
            connection.at_close(lambda: closed.append(connection.close_reason))

            async def task() -> None:
                await trio.sleep(0.01)
                log.append("task ran")

            connection.start_soon(task)
            assert channel.wakes == 1
            await trio.testing.wait_all_tasks_blocked()
            await channel.idle.wait()
            assert log == ["task ran"] and tasks_under(nursery) == 0
            assert connection.send_nowait(b'{"jsonrpc":"2.0","method":"n"}')
            assert channel.sent[-1] == {"jsonrpc": "2.0", "method": "n"}
            # Shutdown reaches an idle connection: a round sees it and ends the connection.
            connection.stop_reading()
            await channel.idle.wait()
            assert connection.ended and closed == ["shutdown"]
            with pytest.raises(RuntimeError):
                connection.start_soon(task)


def _count(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


async def test_an_idle_connection_holds_no_event_scope_or_nursery() -> None:
    """Between rounds a connection holds plain state only: no trio Event (its reader's
    "ended" is made by the first wait for it), cancel scope or nursery (issue 22 item 4)."""
    log: list[str] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            before = [_count(kind) for kind in (trio.Event, trio.CancelScope, trio.Nursery)]
            opened = [await open_rounds(log, nursery) for _ in range(20)]
            for _, channel in opened:
                channel.idle = trio.Event()  # (the test's own events: not the connection's)
            after = [_count(kind) for kind in (trio.Event, trio.CancelScope, trio.Nursery)]
            assert [a - b for a, b in zip(after, before, strict=True)] == [20, 0, 0]
            for _, channel in opened:
                channel.close_input()
