"""``MemoryEventStore`` keeps a short session's events in a list and a full one's in a
bounded deque (issue 22 item 4: an idle session holds its priming event alone); replay is
the same on both sides of the switch."""

from __future__ import annotations

import trio

from runtime.stores import MemoryEventStore


async def test_replay_across_the_switch_to_a_bounded_queue() -> None:
    store = MemoryEventStore(max_events=3)
    with trio.fail_after(5):
        prime = await store.append("s", "g0", None)
        assert prime == "g0_1"
        assert await store.replay("s", prime) == ("g0", [])
        await store.append("s", "g0", b"a")
        await store.append("s", "p1", b"b")  # full: three events
        assert await store.replay("s", prime) == ("g0", [("g0_2", b"a")])
        await store.append("s", "g0", b"c")  # the oldest (the priming event) drops out
        await store.append("s", "g0", b"d")  # and then "a"
        assert await store.replay("s", prime) == ("g0", [("g0_3", b"c"), ("g0_4", b"d")])
        assert await store.replay("s", "p1_0") == ("p1", [("p1_1", b"b")])
        await store.forget("s")
        assert await store.replay("s", prime) is None
