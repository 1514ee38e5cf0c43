"""A 2026-07-28 ``subscriptions/listen`` served without a core Connection (issue 22 item 4:
memory per idle listen): one task and no connection per listen; the shutdown grace still
bounds a listen that does not end with its result (-32000, as a one-POST connection's
request cut short); middleware still runs around a listen, and its refusal is the answer."""

from __future__ import annotations

import gc
import json
from collections import Counter
from typing import Any

import trio

from runtime.core import Connection
from runtime.middleware import Next, Request
from runtime.protocol import JSONRPCError

from .app import make_app, modern, modern_headers, next_notification, open_listen, serving
from .http_client import connect
from .test_http_idle_streams import SUBSCRIPTION_ID, TOOLS_CHANGED, _task_names


def _connections() -> int:
    gc.collect()
    return sum(isinstance(o, Connection) for o in gc.get_objects())


def _live(kind: type) -> int:
    gc.collect()
    return sum(isinstance(o, kind) for o in gc.get_objects())


async def test_an_idle_listen_holds_one_task_and_no_connection() -> None:
    """The handler runs and waits in the HTTP connection's own task (issue 22 item 4): per
    idle listen one task, no nursery (the connection's reader task, while an app waits,
    runs in the listener's), and one cancel scope beside the connection's own one (its
    generation, which stopping it cancels): the wait's."""
    app, _ = make_app()
    # A hang guard only (the counts are what is asserted): each gc.collect walks every object
    # of the test process, seconds in a full run on a loaded machine.
    with trio.fail_after(30):
        async with serving(app) as address:
            before = _task_names()
            connections = _connections()
            nurseries = _live(trio.Nursery)
            listens = [await open_listen(address, 10 + i, TOOLS_CHANGED) for i in range(3)]
            await trio.sleep(0.05)
            scopes = _live(trio.CancelScope)
            listens += [await open_listen(address, 13 + i, TOOLS_CHANGED) for i in range(3)]
            await trio.sleep(0.05)
            after = _task_names()
            assert "_run_listen" not in after and "_serve_one" not in after
            grown = Counter(after) - Counter(before)
            # Per listen: the HTTP connection's task, nothing else (a one-off task of the
            # server may start meanwhile).
            assert {name: n for name, n in grown.items() if n >= 6} == {"_run_handler": 6}
            assert _live(trio.Nursery) - nurseries == 0
            # Over the last three: two scopes each, and one each the test's client holds
            # while it reads (before: seven each, then four with a nursery's and the
            # connection's own around its generation among them);
            # a server's timer may hold one more or one less at either count.
            assert 3 * (2 + 1) - 2 <= _live(trio.CancelScope) - scopes <= 3 * (2 + 1) + 2
            # No core Connection per listen (others may be left by earlier tests: count).
            assert _connections() <= connections

            def extra() -> str:
                return "x"

            app.add_tool(extra)  # a change still reaches each one, tagged with its id
            for i, conn in enumerate(listens):
                changed = await next_notification(conn, "notifications/tools/list_changed")
                assert changed["params"]["_meta"][SUBSCRIPTION_ID] == 10 + i
                await conn.aclose()


async def test_an_idle_listen_holds_no_context_manager_for_its_subscriber() -> None:
    """The listen handler's subscriber is not held through a generator context manager
    (its object and suspended generator, about 0.5 KiB per idle listen: issue 22 item 4)."""
    app, _ = make_app()
    with trio.fail_after(5):
        async with serving(app) as address:
            gc.collect()
            before = Counter(type(o).__name__ for o in gc.get_objects())
            listens = [await open_listen(address, 40 + i, TOOLS_CHANGED) for i in range(3)]
            await trio.sleep(0.05)
            gc.collect()
            grown = Counter(type(o).__name__ for o in gc.get_objects()) - before
            assert grown["_GeneratorContextManager"] == 0
            for conn in listens:
                await conn.aclose()


async def test_a_listen_that_outlives_the_shutdown_grace_is_answered_minus_32000() -> None:
    app, _ = make_app(shutdown_grace=0.3)
    seen: list[str] = []

    @app.middleware
    async def linger(request: Request, call_next: Next) -> Any:
        result = await call_next()
        if request.method == "subscriptions/listen":
            seen.append("ended")
            await trio.sleep(30)  # past the grace: the shutdown cuts it short
        return result

    with trio.fail_after(10):
        async with serving(app) as address:
            conn = await open_listen(address, 20, TOOLS_CHANGED)
            started = trio.current_time()
            app.shutdown()
            rest = await conn.events()
            elapsed = trio.current_time() - started
            final = json.loads(rest[-1].data)
            assert seen == ["ended"]
            assert final["id"] == 20 and final["error"]["code"] == -32000, final
            assert elapsed < 1.5, elapsed  # the grace (0.3 s), not the outer cut-off
            await conn.aclose()


async def test_middleware_runs_around_a_listen_and_its_refusal_is_the_answer() -> None:
    app, _ = make_app()
    methods: list[str] = []

    @app.middleware
    async def gate(request: Request, call_next: Next) -> Any:
        methods.append(request.method)
        if request.method == "subscriptions/listen" and request.id == 31:
            raise JSONRPCError(-32602, "no listens today")
        return await call_next()

    with trio.fail_after(5):
        async with serving(app) as address:
            conn = await open_listen(address, 30, TOOLS_CHANGED)  # allowed: acknowledged
            refused = await connect(address)
            await refused.send(
                "POST",
                "/mcp",
                headers=modern_headers("subscriptions/listen"),
                body=modern(31, "subscriptions/listen", {"notifications": TOOLS_CHANGED}),
            )
            response = await refused.response()
            # The error as the JSON answer (what a one-POST connection answered too).
            assert response.status == 200, response
            assert response.json()["id"] == 31
            assert response.json()["error"] == {"code": -32602, "message": "no listens today"}
            assert methods == ["subscriptions/listen", "subscriptions/listen"]
            await refused.aclose()
            await conn.aclose()
