"""A mounted server's own middleware and completion, and the lifespan of a server mounted
while serving: the served file over real HTTP (a subprocess on 127.0.0.1) with the official
SDK client as the peer."""

from __future__ import annotations

import trio
import trio.testing

from ..peers import open_served_http, run_sdk_client


async def test_mounted_chains_completion_and_dynamic_lifespan_over_http() -> None:
    async with open_served_http("tests/composition/mounted_chains.py") as url:
        out = await run_sdk_client("composition/sdk_chains_client.py", url, timeout=90)
    # The kid's middleware runs for the kid's tools, under the kid's own names ...
    assert out["search"] == "kid found x (via kid middleware)"
    # ... and not for the parent's own.
    assert out["own"] == "parent y"
    before = out["events_before"]
    assert before[0] == "kid enter"  # its lifespan, entered when the parent started serving
    assert "kid request tools/call search" in before
    assert "kid call search" in before
    assert "kid request prompts/get greet" in before
    assert "kid request resources/read notes://abc" in before
    assert "kid request completion/complete greet" in before
    assert not any("own" in event or "get_events" in event for event in before)
    assert out["greet"]["messages"][0]["content"]["text"] == "hello ann"
    assert out["note"]["contents"][0]["text"] == "note abc"
    # Completion through the prefix reaches the kid's completer with its own names.
    assert out["complete_prompt"]["completion"]["values"] == ["b-from-kid-greet"]
    assert out["complete_template"]["completion"]["values"] == ["n-from-kid-notes://{name}"]
    assert "kid complete ref/prompt greet who" in before
    assert "kid complete ref/resource notes://{name} name" in before
    assert out["complete_parent"]["completion"]["values"] == ["t-from-parent"]
    # Mounted while serving: lifespan entered, list_changed sent, its middleware applies.
    assert "late_where" in out["tools_mounted"]
    assert out["where"] == "late state=late-state (via late middleware)"
    assert out["complete_late"]["completion"]["values"] == ["green"]  # its annotation
    assert "late_where" not in out["tools_unmounted"]
    after = out["events_after"][len(before) :]
    assert after.index("late enter") < after.index("late request tools/call where")
    assert after.index("late exit") > after.index("late call where")  # exited at unmount
    assert out["notifications"].count("notifications/tools/list_changed") >= 2


async def test_a_server_with_middleware_mounted_while_serving_gets_its_chain_in_place() -> None:
    """A parent that started serving without mounted middleware gets the chains when a
    server with middleware is mounted: in the dispatcher its connections already hold (the
    same object), so their next requests run the child's middleware (over HTTP with the
    SDK: tests/composition/test_mount_lists.py)."""
    from runtime import Server
    from runtime.ensemble import routes_mounts
    from runtime.middleware import Next, Request

    parent = Server("parent")
    child = Server("child")

    @child.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    @child.middleware
    async def mark(request: Request, call_next: Next) -> object:
        return await call_next()

    plain = Server("plain")

    @plain.tool
    def hello() -> str:
        """Hello."""
        return "hi"

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(parent.serve_http, 0)
            try:
                held = parent.dispatcher
                assert not routes_mounts(held)
                parent.mount(plain, prefix="p")  # no middleware: nothing to install
                assert not routes_mounts(held)
                parent.mount(child, prefix="c")
                assert parent.dispatcher is held and routes_mounts(held)
                await trio.testing.wait_all_tasks_blocked()  # the lifespan tasks, then attach
                assert "p_hello" in parent.registry.tools and "c_ping" in parent.registry.tools
            finally:
                nursery.cancel_scope.cancel()
