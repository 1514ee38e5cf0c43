"""``Subscriber.take``: a waiting consumer is handed its changes by the hub, all subscribers in
one pass once the publisher yields (issue 22 item 3), instead of being woken; a burst still
coalesces, and what it declines is delivered the usual way, in order."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel
import trio.testing

from runtime.features import Broadcast, Change


class StepCounter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1


async def test_take_is_handed_a_burst_coalesced_and_declined_changes_wait_in_order() -> None:
    hub = Broadcast()
    taken: list[Change] = []
    accept = [True]

    def take(change: Change) -> bool:
        if accept[0]:
            taken.append(change)
        return accept[0]

    with trio.fail_after(5), hub.subscribe(["tools", "prompts"]) as sub:
        sub.watch("mem://a")
        sub.take = take
        hub.resource_updated("mem://a")
        hub.list_changed("tools")
        hub.resource_updated("mem://a")  # (coalesces: published before the hand-over)
        assert taken == []  # handed over once the publisher yields
        await trio.testing.wait_all_tasks_blocked()
        assert taken == [("updated", "mem://a"), ("list", "tools")]
        assert sub.pending == 0
        accept[0] = False  # e.g. the socket would block: it waits, the consumer is woken
        hub.list_changed("prompts")
        hub.resource_updated("mem://a")
        await trio.testing.wait_all_tasks_blocked()
        assert sub.pending == 2
        sub.take = None  # (the consumer took over)
        assert await sub.receive() == [("list", "prompts"), ("updated", "mem://a")]
        assert taken == [("updated", "mem://a"), ("list", "tools")]


async def test_a_declined_change_holds_back_the_later_ones() -> None:
    hub = Broadcast()
    taken: list[Change] = []
    with trio.fail_after(5), hub.subscribe(["tools", "prompts"]) as sub:
        sub.take = lambda change: change != ("list", "tools") and taken.append(change) is None
        hub.list_changed("prompts")
        hub.list_changed("tools")  # declined: stays pending
        hub.list_changed("resources")  # (not subscribed)
        await trio.testing.wait_all_tasks_blocked()
        assert taken == [("list", "prompts")]
        hub.list_changed("prompts")  # after the declined one: waits behind it
        await trio.testing.wait_all_tasks_blocked()
        assert taken == [("list", "prompts")]
        sub.take = None
        assert await sub.receive() == [("list", "tools"), ("list", "prompts")]


async def test_one_pass_hands_a_change_to_many_waiting_subscribers() -> None:
    hub = Broadcast()
    taken: list[tuple[int, Change]] = []
    counter = StepCounter()
    subs = [hub.open(["tools"], label=str(i)) for i in range(200)]
    for i, sub in enumerate(subs):
        sub.take = lambda change, i=i: taken.append((i, change)) is None
    with trio.fail_after(5):
        await trio.testing.wait_all_tasks_blocked()
        trio.lowlevel.add_instrument(counter)
        try:
            hub.list_changed("tools")
            await trio.testing.wait_all_tasks_blocked()
        finally:
            trio.lowlevel.remove_instrument(counter)
    assert sorted(taken) == [(i, ("list", "tools")) for i in range(200)]
    assert counter.steps < 10  # not one per subscriber
    for sub in subs:
        sub.end("closed")


async def test_a_take_that_fails_leaves_its_change_to_the_consumer_and_not_the_others() -> None:
    hub = Broadcast()
    taken: list[str] = []

    def broken(change: Change) -> bool:
        raise RuntimeError("a bug in one consumer")

    with trio.fail_after(5):
        subs = [hub.open(["tools"], label=str(i)) for i in range(3)]
        for i, sub in enumerate(subs):
            sub.take = lambda change, i=i: taken.append(str(i)) is None
        subs[1].take = broken
        hub.list_changed("tools")
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(taken) == ["0", "2"]
        assert [sub.pending for sub in subs] == [0, 1, 0]
        subs[1].take = None
        assert await subs[1].receive() == [("list", "tools")]  # (delivered once, not lost)
        for sub in subs:
            sub.end("closed")


async def test_a_subscriber_ended_before_the_hand_over_gets_its_change_by_receive() -> None:
    hub = Broadcast()
    taken: list[Change] = []
    with trio.fail_after(5):
        sub = hub.open(["tools"])
        sub.take = lambda change: taken.append(change) is None
        hub.list_changed("tools")
        sub.end("closed")  # before the publisher yields: no hand-over to an ended one
        await trio.testing.wait_all_tasks_blocked()
        assert taken == []
        sub.take = None
        assert await sub.receive() == [("list", "tools")]
        with pytest.raises(trio.EndOfChannel):
            await sub.receive()
        assert len(hub) == 0


async def test_a_waiting_consumer_without_take_is_woken_beside_those_that_take() -> None:
    hub = Broadcast()
    taken: list[Change] = []
    got: list[list[Change]] = []
    with trio.fail_after(5):
        plain = hub.open(["tools"])
        quick = hub.open(["tools"])
        quick.take = lambda change: taken.append(change) is None
        async with trio.open_nursery() as nursery:

            async def consume() -> None:
                got.append(await plain.receive())

            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            hub.list_changed("tools")
        assert got == [[("list", "tools")]]
        assert taken == [("list", "tools")]
        plain.end("closed")
        quick.end("closed")
