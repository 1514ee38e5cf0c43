"""A 2026-07-28 client through the proxy: the remote's log messages for its request at the
level the request carries (a remote of either era), and a handshake-era remote's elicitation
as an input round of the client's request. Our server upstream and our client downstream,
both over Streamable HTTP (whose per-request streams tie a message to its request)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.bridge import Forward, proxy_server
from runtime.client import Notification, PeerError, open_client
from runtime.middleware import Next, Request

from .test_bridge_sdk import background, free_port


def upstream() -> Server:
    app = Server("upstream", "3.0.0")

    @app.tool
    async def chatty(tag: str, ctx: Context) -> str:
        """Logs at debug, info and warning while it runs."""
        await ctx.debug(f"debug {tag}")
        await trio.sleep(0.02)
        await ctx.info(f"info {tag}")
        await ctx.warning(f"warning {tag}")
        return tag

    @app.tool
    async def ask_name(ctx: Context) -> str:
        """Elicits a name (twice when the first answer is "again")."""
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        answer = await ctx.elicit("Your name?", schema)
        name = (answer.get("content") or {}).get("name")
        if name == "again":
            answer = await ctx.elicit("Really, your name?", schema)
            name = (answer.get("content") or {}).get("name")
        return f"hello {name} ({answer['action']})"

    return app


def logs(seen: list[Notification]) -> list[tuple[str, str]]:
    return [
        (str(n.params.get("level")), str(n.params.get("data")))
        for n in seen
        if n.method == "notifications/message"
    ]


@pytest.mark.parametrize("upstream_era", ["handshake", "modern"])
async def test_log_messages_reach_the_modern_request_at_its_level(upstream_era: str) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_http))[1]
            proxy = proxy_server(f"http://127.0.0.1:{port}/mcp", era=upstream_era)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with open_client(url, era="modern") as client:
                assert client.description is not None
                assert "logging" in client.description.capabilities
                # No level asked: no log messages (2026-07-28 server/utilities/logging).
                quiet: list[Notification] = []
                assert (
                    await client.call_tool("chatty", {"tag": "q"}, on_notification=quiet.append)
                ).text == "q"
                assert logs(quiet) == []
                await client.set_logging_level("info")
                seen: dict[str, list[Notification]] = {"a": [], "b": []}

                async def call(tag: str) -> None:
                    result = await client.call_tool(
                        "chatty", {"tag": tag}, on_notification=seen[tag].append
                    )
                    assert result.text == tag

                async with trio.open_nursery() as calls:  # each sees only its own
                    calls.start_soon(call, "a")
                    calls.start_soon(call, "b")
                for tag in ("a", "b"):
                    assert logs(seen[tag]) == [
                        ("info", f"info {tag}"),
                        ("warning", f"warning {tag}"),
                    ]
            # Another modern client asking for debug gets debug too (its own level, though
            # the shared upstream session is the same one).
            async with open_client(url, era="modern") as other:
                await other.set_logging_level("debug")
                verbose: list[Notification] = []
                await other.call_tool("chatty", {"tag": "v"}, on_notification=verbose.append)
                assert logs(verbose) == [
                    ("debug", "debug v"),
                    ("info", "info v"),
                    ("warning", "warning v"),
                ]
            nursery.cancel_scope.cancel()


async def test_a_handshake_remote_elicitation_is_an_input_round_of_the_modern_request() -> None:
    rounds: list[Any] = []
    asked: list[str] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_http))[1]
            proxy = proxy_server(f"http://127.0.0.1:{port}/mcp", era="handshake")

            @proxy.middleware
            async def record(request: Request, call_next: Next) -> Any:
                result = await call_next()
                if request.method == "tools/call":
                    rounds.append(
                        (
                            "requestState" in request.params,
                            result.get("resultType") if isinstance(result, dict) else None,
                            sorted((result.get("inputRequests") or {}).values(), key=str)
                            if isinstance(result, dict)
                            else None,
                        )
                    )
                return result

            proxy_port = (await nursery.start(proxy.serve_http))[1]
            answers = iter(["again", "Ada"])

            async def elicit(params: dict[str, Any]) -> dict[str, Any]:
                asked.append(params["message"])
                return {"action": "accept", "content": {"name": next(answers)}}

            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="modern", elicitation=elicit
            ) as client:
                result = await client.call_tool("ask_name", {})
                assert result.text == "hello Ada (accept)"
                assert asked == ["Your name?", "Really, your name?"]
                # Three downstream requests: two answered with an input round (the
                # remote's elicitation/create), the last (a retry) with the result.
                assert [(retry, kind) for retry, kind, _ in rounds] == [
                    (False, "input_required"),
                    (True, "input_required"),
                    (True, None),
                ]
                first = rounds[0][2][0]
                assert first["method"] == "elicitation/create"
                assert first["params"]["message"] == "Your name?"
                (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]
                assert forward.parked == {} and forward.forwardings == []
                # A retry naming a forwarding that does not exist: a precise error.
                with pytest.raises(PeerError) as raised:
                    await client.request("tools/call", retry_of("mcp-runtime-bridge:nope"))
                assert raised.value.code == -32602
                assert "requestState" in raised.value.message
            nursery.cancel_scope.cancel()


def retry_of(state: str) -> dict[str, Any]:
    return {
        "name": "ask_name",
        "arguments": {},
        "inputResponses": {"bridge-1": {"action": "accept", "content": {"name": "Late"}}},
        "requestState": state,
    }


async def test_an_input_round_nobody_answers_ends_the_forwarded_request() -> None:
    """The client takes the round (``request`` does not answer rounds) and never retries:
    after the input timeout the remote's elicitation is answered with an error, its request
    ends, and a late retry is refused (``round_timeout``, ``--upstream-round-timeout``)."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_http))[1]
            proxy = proxy_server(f"http://127.0.0.1:{port}/mcp", era="handshake", round_timeout=0.5)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]

            async def elicit(params: dict[str, Any]) -> dict[str, Any]:
                raise AssertionError("request() does not answer input rounds")

            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="modern", elicitation=elicit
            ) as client:
                first = await client.request("tools/call", {"name": "ask_name", "arguments": {}})
                assert first["resultType"] == "input_required"
                (request,) = first["inputRequests"].values()
                assert request["method"] == "elicitation/create"
                state = first["requestState"]
                assert state in forward.parked
                for _ in range(300):
                    if not forward.parked and not forward.forwardings:
                        break
                    await trio.sleep(0.01)
                else:
                    raise AssertionError("the unanswered forwarding was not ended")
                with pytest.raises(PeerError) as raised:
                    await client.request("tools/call", retry_of(state))
                assert raised.value.code == -32602
            nursery.cancel_scope.cancel()


async def test_sdk_remote_logs_and_elicitation_reach_a_modern_client() -> None:
    """The official SDK's server (handshake era, Streamable HTTP, a separate process) behind
    the proxy; our client in 2026-07-28: the tool's log messages at the client's level, its
    elicitation as an input round."""
    port = free_port()
    command = [sys.executable, str(Path(__file__).parent / "sdk_asking_upstream.py"), str(port)]
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    with trio.fail_after(60):
        async with background(command, port), trio.open_nursery() as nursery:
            proxy = proxy_server(f"http://127.0.0.1:{port}/mcp", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="modern", elicitation=elicit
            ) as client:
                await client.set_logging_level("info")
                seen: list[Notification] = []
                result = await client.call_tool("chatty", {"tag": "s"}, on_notification=seen.append)
                assert result.text == "s"
                assert logs(seen) == [("info", "info s"), ("warning", "warning s")]
                result = await client.call_tool("ask_name", {})
                assert result.text == "hello Ada"
                assert [a["message"] for a in asked] == ["Your name?"]
            nursery.cancel_scope.cancel()
