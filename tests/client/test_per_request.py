"""``Client.request``/``call_tool`` per-call callbacks: the notifications and server requests
that arrive on one request's own response stream (Streamable HTTP) reach that call's
``on_notification``/``on_request``, and only that call's."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.client import Notification, PeerError, open_client


def logging_server() -> Server:
    app = Server("logs", "1.0.0")

    @app.tool
    async def chatty(tag: str, ctx: Context) -> str:
        """Logs twice (debug and warning), then answers."""
        await ctx.debug(f"debug {tag}")
        await trio.sleep(0.05)
        await ctx.warning(f"warning {tag}")
        return tag

    @app.tool
    async def confirm(ctx: Context) -> str:
        """Asks the client (elicitation) and says what it answered."""
        answer = await ctx.elicit("sure?", {"type": "object", "properties": {}})
        return str(answer.get("action"))

    return app


@pytest.mark.parametrize("era", ["modern", "handshake"])
async def test_log_messages_reach_the_call_they_came_on(era: Any) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(logging_server().serve_http))[1]
            everything: list[Notification] = []
            async with open_client(
                f"http://127.0.0.1:{port}/mcp", era=era, on_notification=everything.append
            ) as client:
                await client.set_logging_level("debug")
                seen: dict[str, list[Any]] = {"a": [], "b": []}

                async def call(tag: str) -> None:
                    result = await client.call_tool(
                        "chatty",
                        {"tag": tag},
                        on_notification=lambda note: seen[tag].append(
                            (note.method, note.params.get("level"), note.params.get("data"))
                        ),
                    )
                    assert result.text == tag

                async with trio.open_nursery() as calls:  # concurrent: each sees only its own
                    calls.start_soon(call, "a")
                    calls.start_soon(call, "b")
                for tag in ("a", "b"):
                    assert seen[tag] == [
                        ("notifications/message", "debug", f"debug {tag}"),
                        ("notifications/message", "warning", f"warning {tag}"),
                    ]
                # The client-wide callback still sees them all.
                logs = [n for n in everything if n.method == "notifications/message"]
                assert len(logs) == 4
                # And the generic request() takes the callback too.
                raw_seen: list[Notification] = []
                raw = await client.request(
                    "tools/call",
                    {"name": "chatty", "arguments": {"tag": "c"}},
                    on_notification=raw_seen.append,
                )
                assert raw["content"][0]["text"] == "c"
                assert [n.params["data"] for n in raw_seen] == ["debug c", "warning c"]
            nursery.cancel_scope.cancel()


async def test_a_server_request_on_a_call_stream_goes_to_that_calls_handler() -> None:
    """Handshake era: the elicitation the server sends on the call's POST stream is answered
    by the call's ``on_request``, not the client's handler."""
    asked: list[tuple[str, dict[str, Any]]] = []

    async def client_wide(params: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("the client-wide handler must not be asked")

    async def per_call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params))
        return {"action": "decline"}

    async def refusing(method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise PeerError(-32042, "no, thanks")

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(logging_server().serve_http))[1]
            async with open_client(
                f"http://127.0.0.1:{port}/mcp", era="handshake", elicitation=client_wide
            ) as client:
                result = await client.request(
                    "tools/call", {"name": "confirm", "arguments": {}}, on_request=per_call
                )
                assert result["content"][0]["text"] == "decline"
                assert asked and asked[0][0] == "elicitation/create"
                assert asked[0][1]["message"] == "sure?"
                # The handler's PeerError is what the server got (and passes on here).
                with pytest.raises(PeerError) as raised:
                    await client.request(
                        "tools/call", {"name": "confirm", "arguments": {}}, on_request=refusing
                    )
                assert "no, thanks" in raised.value.message
            nursery.cancel_scope.cancel()
