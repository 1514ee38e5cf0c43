"""Idle 2026-07-28 listen streams and one-POST connections held with fewer tasks (issue 22
item 4): shutdown reaches them through one shared watcher, a hang-up is still noticed, and
quiet streams still carry keep-alive comments."""

from __future__ import annotations

import gc
import json
from typing import Any

import h11
import trio

from runtime import Context
from runtime.protocol import ModernRequest
from runtime.transports import HttpLimits

from .app import (
    call,
    make_app,
    modern,
    modern_headers,
    next_notification,
    open_listen,
    serving,
    until,
)
from .http_client import HttpConn, connect
from .test_http_session import open_session

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
TOOLS_CHANGED = {"toolsListChanged": True}


def _task_names() -> list[str]:
    names: list[str] = []
    root = trio.lowlevel.current_root_task()
    assert root is not None
    stack = [root]
    while stack:
        task = stack.pop()
        names.append(task.name.rsplit(".", 1)[-1])
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return names


async def test_shutdown_ends_every_idle_listen_with_its_result_and_no_watcher_task_each() -> None:
    app, _ = make_app(shutdown_grace=5)
    with trio.fail_after(10):
        async with serving(app) as address:
            listens = [await open_listen(address, 20 + i, TOOLS_CHANGED) for i in range(4)]
            # No shutdown watcher per one-POST connection: the endpoint's one watcher.
            assert _task_names().count("_watch_shutdown") == 0
            assert _task_names().count("stop_at_shutdown") == 1
            started = trio.current_time()
            app.shutdown()
            for i, conn in enumerate(listens):
                rest = await conn.events()  # until the server ends the stream
                final = json.loads(rest[-1].data)
                assert final["id"] == 20 + i
                assert final["result"]["_meta"][SUBSCRIPTION_ID] == 20 + i
                await conn.aclose()
            # Ended by the shutdown itself, not by the grace running out.
            assert trio.current_time() - started < 2.0


async def test_shutdown_bounds_a_streamed_modern_request_by_the_grace() -> None:
    """A streamed modern request (a one-POST connection draining after its body) that
    outlives the grace is answered -32000 soon after it: the shared watcher reaches it."""
    app, seen = make_app(shutdown_grace=0.3)
    params = {
        "name": "slow",
        "arguments": {"tag": "long", "seconds": 30},
        "_meta": {"progressToken": "p"},
    }
    with trio.fail_after(10):
        async with serving(app) as address:
            conn = await connect(address)
            await conn.send(
                "POST",
                "/mcp",
                headers=modern_headers("tools/call", "slow"),
                body=modern(7, "tools/call", params),
            )
            await until(lambda: seen["started"])
            started = trio.current_time()
            app.shutdown()
            head = await conn.head()
            assert head.status in (200, 503)
            body = (await conn.body()).decode()
            elapsed = trio.current_time() - started
            assert '"code":-32000' in body.replace(" ", ""), body
            assert seen["cancelled"] == ["long"]
            assert elapsed < 1.2, elapsed  # the grace (0.3 s), not the outer cut-off
            await conn.aclose()


async def test_shutdown_bounds_a_modern_request_by_the_grace() -> None:
    """A modern request answered from its POST's task (no connection of its own) that
    outlives the grace is answered -32000 soon after it, as every other request cut short
    by shutdown: the endpoint's one watcher bounds it."""
    app, seen = make_app(shutdown_grace=0.3)
    params = {"name": "slow", "arguments": {"tag": "plain", "seconds": 30}}
    with trio.fail_after(10):
        async with serving(app) as address:
            conn = await connect(address)
            await conn.send(
                "POST",
                "/mcp",
                headers=modern_headers("tools/call", "slow"),
                body=modern(8, "tools/call", params),
            )
            await until(lambda: seen["started"])
            started = trio.current_time()
            app.shutdown()
            head = await conn.head()
            body = (await conn.body()).decode()
            elapsed = trio.current_time() - started
            assert head.status == 503
            assert json.loads(body)["error"]["code"] == -32000
            assert seen["cancelled"] == ["plain"]
            assert elapsed < 1.2, elapsed  # the grace (0.3 s), not the outer cut-off
            await conn.aclose()


async def test_a_client_hanging_up_an_idle_listen_drops_its_subscription() -> None:
    app, _ = make_app()
    changes = app.registry.changes
    with trio.fail_after(5):
        async with serving(app) as address:
            before = len(changes)
            conn = await open_listen(address, 30, TOOLS_CHANGED)
            assert len(changes) == before + 1
            await conn.aclose()
            await until(lambda: len(changes) == before)


async def test_an_idle_listen_carries_keep_alive_comments() -> None:
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app, http_limits=HttpLimits(sse_keepalive=0.05)) as address:
            conn = await open_listen(address, 40, TOOLS_CHANGED)
            raw = b""
            while raw.count(b": keep-alive\n\n") < 3:
                event = await conn._event()
                assert isinstance(event, h11.Data)
                raw += event.data
            await conn.aclose()


async def test_idle_listens_hold_no_reader_task_and_still_get_changes() -> None:
    """The stream's own task watches the socket while it waits (``Exchange.watch``): no
    reader task per idle listen; a change still reaches each one, in order."""
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            listens = [await open_listen(address, 50 + i, TOOLS_CHANGED) for i in range(3)]
            await trio.sleep(0.05)
            assert _task_names().count("_reader") == 0
            for round_ in range(2):

                def extra() -> str:
                    return "x"

                extra.__name__ = f"extra{round_}"
                app.add_tool(extra)
                for i, conn in enumerate(listens):
                    changed = await next_notification(conn, "notifications/tools/list_changed")
                    assert changed["params"]["_meta"][SUBSCRIPTION_ID] == 50 + i
            for conn in listens:
                await conn.aclose()


async def test_bytes_sent_on_an_idle_listen_hand_watching_back_to_the_reader() -> None:
    """A client that sends bytes while its listen waits (a pipelined request): the reader
    task reads again (backpressure as before), and a later hang-up is still noticed."""
    app, _ = make_app()
    changes = app.registry.changes
    with trio.fail_after(5):
        async with serving(app) as address:
            before = len(changes)
            conn = await open_listen(address, 60, TOOLS_CHANGED)
            await conn.stream.send_all(b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
            await until(lambda: _task_names().count("_reader") == 1)
            assert len(changes) == before + 1  # the listen lives on
            await conn.stream.aclose()
            await until(lambda: len(changes) == before)


async def _open_get(address: Any, session_id: str) -> HttpConn:
    """The session's GET stream; a 409 (the last one not yet seen gone) is tried again."""
    while True:
        conn = await connect(address)
        await conn.send("GET", "/mcp", headers={"mcp-session-id": session_id})
        head = await conn.head()
        if head.status == 200:
            return conn
        assert head.status == 409, head
        await conn.aclose()
        await trio.sleep(0.02)


async def test_a_client_hanging_up_an_idle_session_get_stream_is_noticed() -> None:
    """The GET stream's own task sees the hang-up (no reader task): the stream detaches, so
    the client's next GET is served rather than refused 409 as a second stream."""
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            session_id = await open_session(address)
            for _ in range(3):
                conn = await _open_get(address, session_id)
                assert await conn.next_event() is not None  # the priming event
                await trio.sleep(0.05)  # idle now
                assert _task_names().count("_reader") == 0
                await conn.aclose()
            await (await _open_get(address, session_id)).aclose()


async def test_keep_alive_connection_serves_on_after_streamed_posts_with_progress() -> None:
    """Streamed POSTs whose progress arrives while the pump starts watching the socket (and
    stops the reader task): each keep-alive connection's next request is still read and
    answered (the conformance check server-sse-multiple-streams hung on such a connection
    when a wake cancelled the stopping of the reader)."""
    app, _ = make_app()

    @app.tool
    async def ticks(spacing: int, *, ctx: Context) -> str:
        """Progress after ``spacing`` scheduler rounds, three times."""
        for step in range(3):
            for _ in range(spacing):
                await trio.lowlevel.checkpoint()
            await ctx.report_progress(step + 1, 3)
        return "liftoff"

    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
            conn = await connect(address)
            # Every spacing from 0 to 5 rounds, so that some message lands while the pump
            # stops the reader task, whatever the scheduler's order.
            for round_ in range(36):
                body = call(100 + round_, "ticks", progress=f"p{round_}", spacing=round_ % 6)
                await conn.send("POST", "/mcp", headers=headers, body=body)
                head = await conn.head()
                assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
                conn.sse = type(conn.sse)()
                messages = [json.loads(e.data) for e in await conn.events() if e.data]
                conn.conn.start_next_cycle()
                progress = [m for m in messages if m.get("method") == "notifications/progress"]
                assert [m["params"]["progress"] for m in progress] == [1, 2, 3]
                assert messages[-1]["id"] == 100 + round_
                assert messages[-1]["result"]["content"][0]["text"] == "liftoff"
            await conn.aclose()


async def test_a_second_get_stream_is_refused_409_and_the_first_stays_up() -> None:
    """2025-03-26 / 2025-11-25 basic/transports: one GET stream per session. A second GET
    gets 409 with a JSON-RPC error body, its connection is answered (not reset), and the
    first stream, idle meanwhile, still delivers a later notification."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            first = await _open_get(address, session_id)
            assert await first.next_event() is not None  # the priming event
            await trio.sleep(0.05)  # idle: its own task watches the socket
            second = await connect(address)
            await second.send("GET", "/mcp", headers={"mcp-session-id": session_id})
            refused = await second.response()
            assert refused.status == 409, refused
            error = refused.json()
            assert error["jsonrpc"] == "2.0" and error["id"] is None
            assert isinstance(error["error"]["code"], int)
            assert "Conflict" in error["error"]["message"]
            await second.aclose()

            def later() -> str:
                return "later"

            app.add_tool(later)
            await next_notification(first, "notifications/tools/list_changed")
            await first.aclose()


async def test_an_idle_listen_holds_no_judged_modern_request() -> None:
    """The POST's judgement (a ModernRequest: the client's capabilities and info) is not
    held while a listen idles (issue 22 item 4); the listen still works."""
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            listens = [await open_listen(address, 70 + i, TOOLS_CHANGED) for i in range(3)]
            await trio.sleep(0.05)
            gc.collect()
            assert not [o for o in gc.get_objects() if isinstance(o, ModernRequest)]

            def extra() -> str:
                return "x"

            app.add_tool(extra)
            for conn in listens:
                await next_notification(conn, "notifications/tools/list_changed")
                await conn.aclose()
