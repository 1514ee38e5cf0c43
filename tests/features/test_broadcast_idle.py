"""``Subscriber.receive(idle)``: the consumer's task waits in ``idle(wake)`` (its own duties,
such as an HTTP listen watching its socket) instead of parking, and the subscriber wakes it
by cancelling ``wake`` (issue 22 item 4: a 2026-07-28 listen in one task)."""

from __future__ import annotations

import contextlib

import trio
import trio.testing

from runtime.features import Broadcast, Change


async def test_idle_is_woken_by_a_change_and_by_the_end() -> None:
    hub = Broadcast()
    scopes: list[trio.CancelScope] = []
    got: list[list[Change]] = []
    ended: list[str | None] = []

    async def idle(wake: trio.CancelScope) -> None:
        scopes.append(wake)
        await trio.sleep_forever()

    with trio.fail_after(5), hub.subscribe(["tools"]) as sub:

        async def consume() -> None:
            try:
                while True:
                    got.append(await sub.receive(idle))
            except trio.EndOfChannel:
                ended.append(sub.end_reason)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            assert len(scopes) == 1 and not scopes[0].cancel_called
            hub.list_changed("tools")
            await trio.testing.wait_all_tasks_blocked()
            assert got == [[("list", "tools")]]
            assert scopes[0].cancel_called and len(scopes) == 2  # a fresh scope each wait
            sub.end("closed")
    assert ended == ["closed"] and scopes[1].cancel_called


async def test_idle_that_ends_its_wait_is_awaited_again_and_loses_nothing() -> None:
    """``idle`` may end its own wait (a keep-alive tick: its scope's deadline); the
    receive waits on in a fresh scope, and a change published meanwhile is delivered."""
    hub = Broadcast()
    calls: list[float] = []

    async def idle(wake: trio.CancelScope) -> None:
        calls.append(trio.current_time())
        wake.deadline = trio.current_time() + 0.01  # as a keep-alive tick
        await trio.sleep_forever()

    with trio.fail_after(5), hub.subscribe(["prompts"]) as sub:
        async with trio.open_nursery() as nursery:

            async def publish_later() -> None:
                await trio.sleep(0.05)
                hub.list_changed("prompts")

            nursery.start_soon(publish_later)
            assert await sub.receive(idle) == [("list", "prompts")]
        assert len(calls) >= 3  # woken by its own deadline, then awaited again


async def test_a_change_taken_by_take_does_not_wake_idle() -> None:
    hub = Broadcast()
    taken: list[Change] = []
    woken: list[bool] = []

    async def idle(wake: trio.CancelScope) -> None:
        try:
            await trio.sleep_forever()
        finally:
            woken.append(True)

    def take(change: Change) -> bool:
        taken.append(change)
        return True

    with trio.fail_after(5), hub.subscribe(["tools"]) as sub:
        sub.take = take
        async with trio.open_nursery() as nursery:

            async def consume() -> None:
                with contextlib.suppress(trio.EndOfChannel):
                    await sub.receive(idle)

            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            hub.list_changed("tools")
            await trio.testing.wait_all_tasks_blocked()
            assert taken == [("list", "tools")] and woken == []
            sub.end("closed")
        assert woken == [True]
