"""``Subscriber.take``: a waiting consumer takes a change straight from the publisher (issue 22
item 3); what it declines, and everything while changes are pending, queues in order."""

from __future__ import annotations

import trio
import trio.testing

from runtime.features import Broadcast, Change


async def test_take_delivers_in_the_publishers_step_and_declined_changes_queue_in_order() -> None:
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
        assert taken == [("updated", "mem://a"), ("list", "tools")]
        assert sub.pending == 0  # nothing queued, nobody to wake
        accept[0] = False  # e.g. the socket would block: queued as before
        hub.list_changed("prompts")
        accept[0] = True
        # Something is pending now: later changes queue behind it, not past it.
        hub.resource_updated("mem://a")
        hub.list_changed("prompts")  # (coalesces with the pending one)
        assert taken == [("updated", "mem://a"), ("list", "tools")]
        assert await sub.receive() == [("list", "prompts"), ("updated", "mem://a")]


async def test_take_is_only_offered_changes_the_subscriber_wants() -> None:
    hub = Broadcast()
    taken: list[Change] = []
    with hub.subscribe(["tools"]) as mine, hub.subscribe(["prompts"]):
        mine.take = lambda change: taken.append(change) is None
        hub.list_changed("prompts")
        hub.resource_updated("mem://a")
        hub.list_changed("tools")
        assert taken == [("list", "tools")]
