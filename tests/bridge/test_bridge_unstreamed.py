"""A remote link without per-request streams (TCP here; stdio, Unix, WebSocket and legacy SSE
are the same): the remote's questions and log messages name no request. The proxy's rule
(runtime.bridge, docs/bridges.md): progress by its token; a question naming a task (2025-11-25
related-task ``_meta``) goes to that task; 2026-07-28 requests that can be asked questions are
forwarded to a handshake-era remote one at a time, so whatever the remote sends meanwhile
belongs to the one in flight. Two concurrent 2026-07-28 calls, each asked its own question
and given only its own log messages; and two concurrent calls of a handshake-era session."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.bridge import Forward, proxy_server
from runtime.client import Client, Notification, open_client

from .test_bridge_sdk import background, free_port, proxy_cli

ASKING = Path(__file__).parent / "sdk_asking_upstream.py"


def upstream(running: list[int]) -> Server:
    """``running``: how many calls were running on the remote when each one started."""
    app = Server("upstream", "3.0.0")
    active: list[str] = []

    @app.tool
    async def introduce(tag: str, ctx: Context) -> str:
        """Logs, asks a name for ``tag``, logs again."""
        active.append(tag)
        running.append(len(active))
        try:
            await ctx.info(f"before {tag}")
            await trio.sleep(0.1)  # the other call would be running now, were it let through
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            answer = await ctx.elicit(f"name for {tag}?", schema)
            await ctx.info(f"after {tag}")
            return f"{tag}: {(answer.get('content') or {}).get('name')}"
        finally:
            active.remove(tag)

    return app


def logs(seen: list[Notification]) -> list[str]:
    return [str(n.params.get("data")) for n in seen if n.method == "notifications/message"]


async def answer(params: dict[str, Any]) -> dict[str, Any]:
    # The name given is the question's own tag: a question put to the wrong call shows.
    tag = str(params["message"]).removeprefix("name for ").removesuffix("?")
    return {"action": "accept", "content": {"name": f"name-of-{tag}"}}


async def introduce_a_and_b(
    client: Client,
) -> tuple[dict[str, str], dict[str, list[Notification]]]:
    """Two concurrent ``introduce`` calls (tags a and b) at log level info: each call's
    result text and the notifications that reached each."""
    await client.set_logging_level("info")
    seen: dict[str, list[Notification]] = {"a": [], "b": []}
    results: dict[str, str] = {}

    async def call(tag: str) -> None:
        result = await client.call_tool("introduce", {"tag": tag}, on_notification=seen[tag].append)
        results[tag] = result.text

    async with trio.open_nursery() as calls:
        calls.start_soon(call, "a")
        calls.start_soon(call, "b")
    return results, seen


@pytest.mark.parametrize("link", ["tcp", "websocket", "legacy-sse"])
async def test_two_concurrent_modern_calls_each_get_their_own_messages(link: str) -> None:
    running: list[int] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            remote = upstream(running)
            if link == "tcp":
                port = (await nursery.start(remote.serve_tcp))[1]
                target = f"tcp://127.0.0.1:{port}"
            elif link == "websocket":
                port = (await nursery.start(remote.serve_websocket))[1]
                target = f"ws://127.0.0.1:{port}/mcp"
            else:
                port = (await nursery.start(remote.serve_sse))[1]
                target = f"http://127.0.0.1:{port}/sse"
            # One upstream session (max_parallel=1, as over stdio): the lane is the rule;
            # test_bridge_parallel.py covers a session per concurrent call.
            proxy = proxy_server(target, era="handshake", max_parallel=1)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="modern", elicitation=answer
            ) as client:
                results, seen = await introduce_a_and_b(client)
            assert results == {"a": "a: name-of-a", "b": "b: name-of-b"}
            assert running == [1, 1]  # one at a time on the remote (the lane)
            # Every log message, to its own call (over TCP they name no request).
            for tag in ("a", "b"):
                assert logs(seen[tag]) == [f"before {tag}", f"after {tag}"]
            nursery.cancel_scope.cancel()


async def test_two_concurrent_calls_of_a_handshake_session() -> None:
    """A handshake-era session has an upstream session of its own: its questions reach its
    client whichever of its requests they relate to; log messages go to the session."""
    running: list[int] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream(running).serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            seen: list[Notification] = []
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp",
                era="handshake",
                elicitation=answer,
                on_notification=seen.append,
            ) as client:
                await client.set_logging_level("info")
                results: dict[str, str] = {}

                async def call(tag: str) -> None:
                    results[tag] = (await client.call_tool("introduce", {"tag": tag})).text

                async with trio.open_nursery() as calls:
                    calls.start_soon(call, "a")
                    calls.start_soon(call, "b")
                await trio.sleep(0.2)
            assert results == {"a": "a: name-of-a", "b": "b: name-of-b"}
            assert sorted(logs(seen)) == ["after a", "after b", "before a", "before b"]
            assert running == [1, 2]  # a session's requests are not serialized
            nursery.cancel_scope.cancel()


async def test_the_sdk_server_over_stdio_behind_the_cli_proxy() -> None:
    """The official SDK's ``MCPServer`` (handshake era) over stdio, behind ``mcp-runtime
    serve "stdio:..." --transport http`` (its own process): two concurrent 2026-07-28 calls,
    each asked its own question as an input round and given only its own log messages."""
    port = free_port()
    remote = shlex.join([sys.executable, str(ASKING), "stdio"])
    proxy = proxy_cli(
        f"stdio:{remote}",
        str(port),
        # The SDK speaks 2026-07-28 too, where its tools cannot elicit over stdio.
        "--upstream-era",
        "handshake",
    )
    with trio.fail_after(60):
        async with (
            background(proxy, port),
            open_client(f"http://127.0.0.1:{port}/mcp", era="modern", elicitation=answer) as client,
        ):
            results, seen = await introduce_a_and_b(client)
            assert results == {"a": "a: name-of-a", "b": "b: name-of-b"}
            for tag in ("a", "b"):
                assert logs(seen[tag]) == [f"before {tag}", f"after {tag}"]


async def test_a_modern_remotes_log_messages_over_tcp() -> None:
    """A 2026-07-28 remote over TCP: its log messages name no request, so the 2026-07-28
    requests that carry a log level go one at a time and each gets what arrives meanwhile;
    a request without a level is not held back and gets none."""
    app = Server("upstream", "3.0.0")
    active: list[str] = []
    running: list[int] = []

    @app.tool
    async def chatty(tag: str, ctx: Context) -> str:
        """Logs twice."""
        active.append(tag)
        running.append(len(active))
        try:
            await ctx.info(f"one {tag}")
            await trio.sleep(0.1)
            await ctx.warning(f"two {tag}")
            return tag
        finally:
            active.remove(tag)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_tcp))[1]
            # One upstream session (max_parallel=1): the lane is the rule here;
            # test_bridge_parallel.py covers a session per concurrent call.
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="modern", max_parallel=1)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with open_client(url, era="modern") as client:
                await client.set_logging_level("info")
                seen: dict[str, list[Notification]] = {"a": [], "b": []}

                async def call(tag: str) -> None:
                    result = await client.call_tool(
                        "chatty", {"tag": tag}, on_notification=seen[tag].append
                    )
                    assert result.text == tag

                async with trio.open_nursery() as calls:
                    calls.start_soon(call, "a")
                    calls.start_soon(call, "b")
                for tag in ("a", "b"):
                    assert logs(seen[tag]) == [f"one {tag}", f"two {tag}"]
                assert running == [1, 1]
            async with open_client(url, era="modern") as quiet:
                running.clear()
                notes: list[Notification] = []

                async def silent(tag: str) -> None:
                    await quiet.call_tool("chatty", {"tag": tag}, on_notification=notes.append)

                async with trio.open_nursery() as calls:
                    calls.start_soon(silent, "c")
                    calls.start_soon(silent, "d")
                assert logs(notes) == []
                assert running == [1, 2]  # no level asked: not serialized
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("target", "per_request"),
    [
        ("http://127.0.0.1:9/mcp", True),
        ("https://example.com/mcp/", True),
        ("http://127.0.0.1:9/sse", False),  # legacy HTTP+SSE: one stream for everything
        ("http://127.0.0.1:9/sse/", False),
        ("ws://127.0.0.1:9/mcp", False),
        ("tcp://127.0.0.1:9", False),
        ("unix:/tmp/mcp.sock", False),
        (["python", "server.py"], False),  # stdio
    ],
)
def test_which_targets_tie_messages_to_requests(target: Any, per_request: bool) -> None:
    """The rule applies to every remote link without per-request streams."""
    proxy = proxy_server(target)
    (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]
    assert forward.streams_per_request is per_request
