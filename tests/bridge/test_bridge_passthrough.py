"""Pass-throughs of a handshake-era session through the proxy, our server upstream (TCP)
and our client downstream: ``notifications/roots/list_changed`` reaches the remote,
``notifications/tasks/status`` comes back, and the session's log level is set again on the
remote after the proxy's upstream link was re-opened."""

from __future__ import annotations

from typing import Any

import trio

from runtime import Context, Server
from runtime.bridge import Forward, proxy_server
from runtime.client import Backoff, Notification, open_client
from runtime.middleware import Middleware, Next, Request


class Notes(Middleware):
    """Records the notifications the remote receives."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    async def on_notification(self, request: Request, call_next: Next) -> None:
        self.seen.append((request.method, request.protocol_version))
        await call_next()


def upstream() -> Server:
    app = Server("upstream", "3.0.0")

    @app.tool
    async def chatty(ctx: Context) -> str:
        """Logs at debug, info and warning."""
        await ctx.debug("debug")
        await ctx.info("info")
        await ctx.warning("warning")
        return "done"

    @app.tool(task="optional")
    async def build(target: str, ctx: Context) -> str:
        """A task."""
        await trio.sleep(0.1)
        return f"built {target}"

    return app


async def wait_for(predicate: Any, what: str) -> None:
    for _ in range(500):
        if predicate():
            return
        await trio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def test_roots_list_changed_reaches_the_remote() -> None:
    notes = Notes()
    app = upstream()
    app.add_middleware(notes)

    async def roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": []}

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with open_client(url, era="handshake", roots=roots) as client:
                await client.notify("notifications/roots/list_changed")
                await wait_for(
                    lambda: any(m == "notifications/roots/list_changed" for m, _ in notes.seen),
                    "the remote got roots/list_changed",
                )
                # Once: one upstream session for our one session.
                assert [m for m, _ in notes.seen].count("notifications/roots/list_changed") == 1
            nursery.cancel_scope.cancel()


async def test_task_status_notifications_come_back() -> None:
    """2025-11-25 basic/utilities/tasks: the remote's notifications/tasks/status for a task
    created through the proxy reach the session that created it, and only that one."""
    seen: list[Notification] = []
    other_seen: list[Notification] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with (
                open_client(url, era="handshake", on_notification=seen.append) as client,
                open_client(url, era="handshake", on_notification=other_seen.append),
            ):
                task = await client.call_tool_as_task("build", {"target": "x"})
                result = await client.task_result(task.task_id, timeout=10)
                assert result["content"] == [{"type": "text", "text": "built x"}]
                await wait_for(
                    lambda: any(
                        n.method == "notifications/tasks/status"
                        and n.params.get("taskId") == task.task_id
                        and n.params.get("status") == "completed"
                        for n in seen
                    ),
                    "notifications/tasks/status completed",
                )
                assert not [n for n in other_seen if n.method == "notifications/tasks/status"]
            nursery.cancel_scope.cancel()


async def test_the_log_level_is_set_again_after_the_remote_restarted() -> None:
    """The session asked for warning; the remote restarts (its default level is debug): the
    proxy's upstream client re-initializes and sets warning again, so info and debug still
    do not come through."""
    seen: list[Notification] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            first = trio.CancelScope()

            async def serve_remote(
                scope: trio.CancelScope, port: int, *, task_status: trio.TaskStatus[Any]
            ) -> None:
                with scope:
                    await upstream().serve_tcp(port, task_status=task_status)

            port = (await nursery.start(serve_remote, first, 0))[1]
            proxy = proxy_server(
                f"tcp://127.0.0.1:{port}",
                era="handshake",
                # Attempts bounded by time only (see test_bridge_eras: 8 jittered ones can
                # all fall inside the 0.3 s the remote is away).
                backoff=Backoff(initial=0.05, cap=0.2, max_attempts=1000, max_elapsed=10),
            )
            proxy_port = (await nursery.start(proxy.serve_tcp))[1]
            async with open_client(
                f"tcp://127.0.0.1:{proxy_port}", era="handshake", on_notification=seen.append
            ) as client:

                def levels() -> list[Any]:
                    return [
                        n.params.get("level") for n in seen if n.method == "notifications/message"
                    ]

                await client.call_tool("chatty", {})
                await wait_for(lambda: len(levels()) == 3, "three log messages at debug")
                seen.clear()
                await client.set_logging_level("warning")
                await client.call_tool("chatty", {})
                await wait_for(lambda: levels() == ["warning"], "warning only")
                first.cancel()  # the remote is gone
                await trio.sleep(0.3)
                await nursery.start(serve_remote, trio.CancelScope(), port)
                seen.clear()
                assert (await client.call_tool("chatty", {})).text == "done"
                await wait_for(lambda: levels() == ["warning"], "warning only, after the restart")
                await trio.sleep(0.2)
                assert levels() == ["warning"]
                (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]
                (session,) = forward.sessions
                assert session.client is not None and session.client.reconnects == 1
            nursery.cancel_scope.cancel()
