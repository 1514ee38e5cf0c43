"""``Subscriber.receive`` waits by parking its task, with no Event per subscriber (issue 22
item 4: memory per idle listen and per session): it is woken by a change or by the
subscriber's end, and a receive cancelled while waiting loses nothing."""

from __future__ import annotations

import gc

import trio
import trio.testing

from runtime.features import Broadcast, Change


async def test_a_waiting_receive_is_woken_by_a_change_and_by_the_end() -> None:
    hub = Broadcast()
    got: list[list[Change]] = []
    ended = []
    with trio.fail_after(5), hub.subscribe(["tools"]) as sub:

        async def consume() -> None:
            try:
                while True:
                    got.append(await sub.receive())
            except trio.EndOfChannel:
                ended.append(sub.end_reason)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            hub.list_changed("tools")
            hub.list_changed("tools")  # (coalesces with the first: not yet received)
            await trio.testing.wait_all_tasks_blocked()
            assert got == [[("list", "tools")]]
            hub.list_changed("tools")
            await trio.testing.wait_all_tasks_blocked()
            assert got == [[("list", "tools")], [("list", "tools")]]
            sub.end("closed")
    assert ended == ["closed"]


async def test_a_receive_cancelled_while_waiting_loses_nothing() -> None:
    hub = Broadcast()
    with trio.fail_after(5), hub.subscribe(["tools", "prompts"]) as sub:
        with trio.move_on_after(0.01) as scope:
            await sub.receive()
        assert scope.cancelled_caught
        hub.list_changed("prompts")  # after the cancelled wait: must not wake a stale task
        assert await sub.receive() == [("list", "prompts")]
        # Cancelled right as a change arrives: the change stays pending.
        async with trio.open_nursery() as nursery:

            async def wait_then_cancelled() -> None:
                with trio.CancelScope() as inner:
                    cancel[0] = inner
                    await sub.receive()

            cancel: list[trio.CancelScope | None] = [None]
            nursery.start_soon(wait_then_cancelled)
            await trio.testing.wait_all_tasks_blocked()
            assert cancel[0] is not None
            cancel[0].cancel()  # (trio aborts the wait at once)
            hub.list_changed("tools")
        assert await sub.receive() == [("list", "tools")]


async def test_idle_subscribers_hold_no_event() -> None:
    hub = Broadcast()
    with trio.fail_after(5), hub.subscribe(["tools"]) as sub:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sub.receive)
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            held = [o for o in gc.get_referents(sub) if isinstance(o, trio.Event)]
            assert held == []
            hub.list_changed("tools")


async def test_subscribers_share_their_kinds_and_an_empty_uri_set_until_they_watch() -> None:
    """Idle subscribers (one per session or listen) hold no frozenset of kinds and no empty
    set of their own (216 bytes each, issue 22 item 4); watching still works per subscriber."""
    hub = Broadcast()
    first = hub.open(["tools", "prompts"])
    second = hub.open(("prompts", "tools"))
    other = hub.open(["resources"])
    assert first.kinds is second.kinds and first.kinds == {"tools", "prompts"}
    assert other.kinds == {"resources"} and other.kinds is not first.kinds
    assert first.uris is second.uris and len(first.uris) == 0
    first.watch("mem://a")
    assert first.uris == {"mem://a"} and len(second.uris) == 0
    assert hub.watched("mem://a")
    hub.resource_updated("mem://a")
    await trio.testing.wait_all_tasks_blocked()
    assert first.pending == 1 and second.pending == 0
    first.unwatch("mem://a")
    second.unwatch("mem://a")  # (never watched: nothing happens)
    assert len(first.uris) == 0 and len(second.uris) == 0 and not hub.watched("mem://a")
    for sub in (first, second, other):
        sub.end("closed")
