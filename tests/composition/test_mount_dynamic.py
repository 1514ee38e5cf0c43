"""Mounted servers changing while the parent serves: middleware added to a child after its
chain ran (and to one mounted without any), and a child's request in flight across its
unmount. The served file over real HTTP (a subprocess on 127.0.0.1) with the official SDK
client as the peer."""

from __future__ import annotations

from typing import Any

import trio

from ..peers import open_served_http, run_sdk_client


async def test_middleware_added_to_mounted_servers_and_a_call_across_an_unmount() -> None:
    async with open_served_http("tests/composition/mounted_dynamic.py") as url:
        out = await run_sdk_client("composition/sdk_dynamic_client.py", url, timeout=90)
    # Added after the kid's chain ran: the next call runs it (innermost, added last).
    assert out["echo_before"] == "a [recorded] [first]"
    assert out["tag_kid"] == "added"
    assert out["echo_after"] == "b [second] [recorded] [first]"
    # Added to a server mounted without middleware: the parent gets the chains in place.
    assert out["hello_before"] == "hi"
    assert out["hello_after"] == "hi [late]"
    # In flight across the unmount: finished on the chain it started with ...
    assert out["unmount"] == "unmounted"
    assert out["slow"] == "slow done [second] [recorded] [first]"
    events = out["events"]
    assert events.index("start slow") < events.index("finish slow")
    # ... and the next call names a tool the parent no longer has: its error, no chain.
    assert out["slow_again"]["code"] == -32602, out["slow_again"]
    assert "kid_slow" in out["slow_again"]["message"]
    assert events.count("start slow") == 1


async def test_middleware_added_to_a_nested_mount_while_serving_runs_from_the_next_call() -> None:
    """``leaf`` mounted in ``mid`` mounted in ``parent``, none with middleware when the
    parent starts serving; ``leaf.add_middleware`` then reaches the parent's dispatcher
    (through ``mid``), and a second one added after the first ran is picked up too."""
    from runtime import Server
    from runtime.middleware import Middleware, Next, ToolCall

    from ..wire import open_memory_peer

    class Tag(Middleware):
        def __init__(self, name: str) -> None:
            self.name = name

        async def on_call_tool(self, call: ToolCall, call_next: Next) -> object:
            assert call.name == "hi"  # the leaf's own name
            result = await call_next()
            result["content"][0].text += f" [{self.name}]"
            return result

    parent, mid, leaf = Server("parent"), Server("mid"), Server("leaf")

    @leaf.tool
    def hi() -> str:
        """Hi."""
        return "hi"

    mid.mount(leaf, prefix="l")
    parent.mount(mid, prefix="m")

    async def text(raw: Any) -> str:
        reply = await raw.call("tools/call", {"name": "m_l_hi", "arguments": {}})
        return str(reply["result"]["content"][0]["text"])

    with trio.fail_after(20):
        async with open_memory_peer(parent) as raw:
            await raw.initialize()
            assert await text(raw) == "hi"
            leaf.add_middleware(Tag("one"))
            assert await text(raw) == "hi [one]"
            leaf.add_middleware(Tag("two"))
            assert await text(raw) == "hi [two] [one]"
            parent.unmount("m")
            changed = await raw.receive()  # the unmount's list-changed comes first
            assert changed["method"] == "notifications/tools/list_changed", changed
            reply = await raw.call("tools/call", {"name": "m_l_hi", "arguments": {}})
            assert reply["error"]["code"] == -32602
