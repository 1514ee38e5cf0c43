"""Progress and log messages a handshake-era remote sends while a 2026-07-28 client's request
is between two input rounds (the round was answered ``input_required``, the client has not
retried yet): no downstream request is attached then, so the proxy holds them and passes them
on the retry's stream (2026-07-28 basic/patterns/mrtr: the retry is the request the remote
is still working on), in order, before its result. Our server upstream (handshake era) and
our client downstream (2026-07-28), both over Streamable HTTP, real sockets."""

from __future__ import annotations

from typing import Any

import trio

from runtime import Context, Server
from runtime.bridge import proxy_server
from runtime.client import Notification, open_client


def upstream(said: trio.Event) -> Server:
    app = Server("upstream", "3.0.0")

    @app.tool
    async def patient(ctx: Context) -> str:
        """Elicits a name and, while the question waits, reports progress and logs."""

        async def chatter() -> None:
            await trio.sleep(0.2)
            await ctx.report_progress(1, 2, "waiting for a name")
            await ctx.info("still waiting")
            await ctx.debug("too verbose")  # below the request's level: never passed on
            said.set()

        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(chatter)
            answer = await ctx.elicit("Your name?", schema)
        await ctx.report_progress(2, 2, "done")
        return f"hello {(answer.get('content') or {}).get('name')}"

    return app


async def test_messages_between_two_rounds_reach_the_retry() -> None:
    said = trio.Event()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream(said).serve_http))[1]
            proxy = proxy_server(f"http://127.0.0.1:{port}/mcp", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="modern") as client:
                await client.set_logging_level("info")
                first_progress: list[tuple[float, float | None, str | None]] = []
                first_notes: list[Notification] = []
                first = await client.request(
                    "tools/call",
                    {"name": "patient", "arguments": {}},
                    progress=lambda *p: first_progress.append(p),
                    on_notification=first_notes.append,
                )
                assert first["resultType"] == "input_required"
                ((key, asked),) = first["inputRequests"].items()
                assert asked["method"] == "elicitation/create"
                # The remote speaks while nobody is attached to its request.
                await said.wait()
                await trio.sleep(0.2)
                assert first_progress == []
                assert [n for n in first_notes if n.method == "notifications/message"] == []
                progress: list[tuple[float, float | None, str | None]] = []
                notes: list[Notification] = []
                done = await client.request(
                    "tools/call",
                    {
                        "name": "patient",
                        "arguments": {},
                        "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                        "requestState": first["requestState"],
                    },
                    progress=lambda *p: progress.append(p),
                    on_notification=notes.append,
                )
                assert done["content"][0]["text"] == "hello Ada"
                # Held between the rounds, then passed on the retry's stream, in order,
                # re-keyed to the retry's own progress token; the debug line filtered.
                assert progress == [(1, 2, "waiting for a name"), (2, 2, "done")]
                assert [
                    (n.params["level"], n.params["data"])
                    for n in notes
                    if n.method == "notifications/message"
                ] == [("info", "still waiting")]
            nursery.cancel_scope.cancel()


async def test_messages_after_the_last_round_reach_the_final_reply() -> None:
    """The remote finishes (after logging) while no retry is attached: the log line is
    passed on the retry's stream, before its result."""
    app = Server("upstream", "3.0.0")

    @app.tool
    async def impatient(ctx: Context) -> str:
        """Asks, gives up waiting after 0.2 s, logs and answers anyway."""
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        with trio.move_on_after(0.2):
            await ctx.elicit("Your name?", schema)
        await ctx.warning("nobody answered")
        return "anonymous"

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_http))[1]
            proxy = proxy_server(f"http://127.0.0.1:{port}/mcp", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="modern") as client:
                await client.set_logging_level("warning")
                first = await client.request("tools/call", {"name": "impatient", "arguments": {}})
                assert first["resultType"] == "input_required"
                ((key, _),) = first["inputRequests"].items()
                await trio.sleep(0.6)  # the remote gave up and answered meanwhile
                notes: list[Notification] = []
                retry: dict[str, Any] = {
                    "name": "impatient",
                    "arguments": {},
                    "inputResponses": {key: {"action": "decline"}},
                    "requestState": first["requestState"],
                }
                done = await client.request("tools/call", retry, on_notification=notes.append)
                assert done["content"][0]["text"] == "anonymous"
                assert [
                    (n.params["level"], n.params["data"])
                    for n in notes
                    if n.method == "notifications/message"
                ] == [("warning", "nobody answered")]
            nursery.cancel_scope.cancel()
