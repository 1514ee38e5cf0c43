"""What an idle subscriber holds (issue 22 item 4): subscribers with the same list kinds
share one frozenset of them, and none holds a set of URIs until it watches one."""

from __future__ import annotations

from runtime.features import Broadcast


async def test_same_kinds_share_one_set_and_no_uri_set_until_a_watch() -> None:
    hub = Broadcast()
    a = hub.open(["tools", "prompts"])
    b = hub.open(["prompts", "tools"])
    c = hub.open(["resources"])
    assert a.kinds is b.kinds and a.kinds == {"tools", "prompts"}
    assert c.kinds == {"resources"} and c.kinds is not a.kinds
    assert a.uris is b.uris and not a.uris  # the one shared empty set
    a.watch("mem://x")
    assert a.uris == {"mem://x"} and not b.uris
    hub.resource_updated("mem://x")
    assert a.pending == 1 and b.pending == 0
    a.unwatch("mem://x")
    b.unwatch("mem://x")  # (not watched: nothing happens)
    assert not a.uris and not hub.watched("mem://x")
    for sub in (a, b, c):
        sub.end("closed")
    assert len(hub) == 0
