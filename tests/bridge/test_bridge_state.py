"""The proxy in-process, our server upstream and our client downstream over loopback:
upstream sessions follow downstream sessions (and are bounded), subscriptions and list
changes in every pair of eras (2026-07-28 ``subscriptions/listen`` downstream or upstream),
and tasks in both task protocols."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.bridge import Forward, proxy_server
from runtime.client import PeerError, Task, open_client


def upstream() -> Server:
    app = Server("upstream", "3.0.0")

    @app.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool
    async def grow(uri: str) -> str:
        """Add a tool (tools/list_changed) and say ``uri`` changed (resources/updated)."""

        def grown() -> str:
            """Added at run time."""
            return "grown"

        if "grown" not in [tool for tool in app.registry.tools]:
            app.add_tool(grown)
        app.notify_resource_updated(uri)
        return "grew"

    @app.resource("mem://watched", mime_type="text/plain")
    def watched() -> str:
        """A resource to subscribe to."""
        return "watched"

    @app.tool(task="optional")
    async def build(target: str, ctx: Context) -> str:
        """A task."""
        await trio.sleep(0.2)
        return f"built {target}"

    @app.tool(task="optional")
    async def forever(ctx: Context) -> str:
        """A task that only ends by cancellation."""
        await trio.sleep_forever()
        return "never"

    return app


def forward_of(proxy: Server) -> Forward:
    (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]
    return forward


async def sessions_down_to(forward: Forward, count: int) -> None:
    """Polls: the upstream session ends in a task of its own once the downstream one did."""
    for _ in range(500):
        if len(forward.sessions) == count:
            return
        await trio.sleep(0.01)
    raise AssertionError(f"{len(forward.sessions)} upstream sessions, expected {count}")


async def test_upstream_sessions_follow_downstream_sessions_and_are_bounded() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_tcp))[1]
            proxy = proxy_server(
                f"tcp://127.0.0.1:{port}", era="handshake", max_upstream_sessions=2
            )
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            forward = forward_of(proxy)
            assert forward.sessions == set()  # opened lazily, by a session's initialize
            async with open_client(url, era="handshake") as first:
                async with open_client(url, era="handshake") as second:
                    assert len(forward.sessions) == 2
                    assert (await second.call_tool("add", {"a": 1, "b": 2})).text == "3"
                    with pytest.raises(PeerError) as raised:
                        async with open_client(url, era="handshake"):
                            pass
                    assert raised.value.code == -32010
                    assert raised.value.data["limit"] == "max_upstream_sessions"
                    assert "max_upstream_sessions" in raised.value.message
                # The second session ended (its client sent DELETE): so did its upstream.
                await sessions_down_to(forward, 1)
                async with open_client(url, era="handshake") as third:
                    assert (await third.call_tool("add", {"a": 2, "b": 2})).text == "4"
                assert (await first.call_tool("add", {"a": 3, "b": 2})).text == "5"
            await sessions_down_to(forward, 0)
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("downstream_era", ["handshake", "modern"])
@pytest.mark.parametrize("upstream_era", ["handshake", "modern"])
async def test_list_changes_and_resource_updates_cross_the_proxy(
    upstream_era: Any, downstream_era: Any
) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era=upstream_era)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with (
                open_client(url, era=downstream_era) as client,
                open_client(url, era=downstream_era) as other,
            ):
                caps = client.description.capabilities if client.description else {}
                assert caps["tools"] == {"listChanged": True}
                assert caps["resources"] == {"subscribe": True, "listChanged": True}
                async with (
                    client.listen(tools=True, resource_uris=["mem://watched"]) as notes,
                    other.listen(tools=True) as other_notes,
                ):
                    await trio.sleep(0.3)  # the listens reach the remote
                    assert (await client.call_tool("grow", {"uri": "mem://watched"})).text
                    seen: dict[str, dict[str, Any]] = {}
                    while len(seen) < 2:
                        note = await notes.receive()
                        if note.method != "notifications/subscriptions/acknowledged":
                            seen[note.method] = note.params
                    assert seen["notifications/resources/updated"]["uri"] == "mem://watched"
                    assert "notifications/tools/list_changed" in seen
                    # The other client did not subscribe to the resource: only the list.
                    note = await other_notes.receive()
                    while note.method == "notifications/subscriptions/acknowledged":
                        note = await other_notes.receive()
                    assert note.method == "notifications/tools/list_changed"
                    with trio.move_on_after(0.3):
                        note = await other_notes.receive()
                        raise AssertionError(f"unexpected {note}")
                names = [tool.name for tool in await client.all_tools()]
                assert "grown" in names
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_tasks_cross_the_proxy(era: Any) -> None:
    """2025-11-25 tasks (params.task, tasks/get, tasks/result, tasks/list, tasks/cancel)
    and the 2026-07-28 tasks extension (resultType task, tasks/get polled, tasks/cancel),
    the remote of the same era."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era=era)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(f"http://127.0.0.1:{proxy_port}/mcp", era=era) as client:
                caps = client.description.capabilities if client.description else {}
                if era == "handshake":
                    assert "tasks" in caps
                else:
                    assert "io.modelcontextprotocol/tasks" in caps["extensions"]
                task = await client.call_tool_as_task("build", {"target": "x"})
                assert isinstance(task, Task)
                assert task.status == "working"
                assert (await client.get_task(task.task_id)).task_id == task.task_id
                result = await client.task_result(task.task_id, timeout=10)
                assert result["content"] == [{"type": "text", "text": "built x"}]
                if era == "handshake":
                    listed = [t.task_id for t in await client.list_tasks()]
                    assert task.task_id in listed
                stuck = await client.call_tool_as_task("forever", {})
                assert isinstance(stuck, Task)
                await client.cancel_task(stuck.task_id)
                assert (await client.get_task(stuck.task_id)).status == "cancelled"
                with pytest.raises(PeerError):
                    await client.get_task("no-such-task")
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("upstream_era", "downstream_era"), [("modern", "handshake"), ("handshake", "modern")]
)
async def test_tasks_are_declared_across_eras(upstream_era: Any, downstream_era: Any) -> None:
    """The two task protocols are translated (test_bridge_tasks_translated.py): a client of
    the other era is told the remote has tasks, in its own era's terms."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era=upstream_era)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with open_client(url, era=downstream_era) as client:
                caps = client.description.capabilities if client.description else {}
                extensions = caps.get("extensions") or {}
                if downstream_era == "handshake":
                    assert caps["tasks"]["requests"] == {"tools": {"call": {}}}
                    assert "io.modelcontextprotocol/tasks" not in extensions
                else:
                    assert "tasks" not in caps
                    assert "io.modelcontextprotocol/tasks" in extensions
                assert "tools" in caps
            nursery.cancel_scope.cancel()


async def test_each_session_is_asked_for_its_own_roots() -> None:
    """The remote's roots/list on a session's upstream session reaches that session's
    client, concurrently; a client that declared no roots is not asked (its upstream client
    declares none either, so the remote refuses)."""
    app = upstream()

    @app.tool
    async def my_roots(ctx: Context) -> list[str]:
        """The caller's roots."""
        return [root["uri"] for root in await ctx.list_roots()]

    def roots_of(uri: str) -> Any:
        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            return {"roots": [{"uri": uri, "name": uri}]}

        return answer

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with (
                open_client(url, era="handshake", roots=roots_of("file:///a")) as a,
                open_client(url, era="handshake", roots=roots_of("file:///b")) as b,
                open_client(url, era="handshake") as none,
            ):
                async with trio.open_nursery() as both:  # concurrently
                    seen: dict[str, Any] = {}

                    async def call(name: str, client: Any) -> None:
                        result = await client.call_tool("my_roots", {})
                        seen[name] = (result.is_error, result.text)

                    both.start_soon(call, "a", a)
                    both.start_soon(call, "b", b)
                assert seen == {"a": (False, "file:///a"), "b": (False, "file:///b")}
                with pytest.raises(PeerError) as raised:
                    await none.call_tool("my_roots", {})
                assert raised.value.code == -32021  # the remote's missing-capability error
                assert "roots" in raised.value.message
            nursery.cancel_scope.cancel()
