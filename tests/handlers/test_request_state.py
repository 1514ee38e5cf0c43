"""B4: ``ctx.request_state``, the handler's own data kept across input rounds (sealed in
``requestState`` in the 2026-07-28 era; a plain dict in the handshake era)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Context, JSONRPCError, Server
from runtime.testing import open_client

app = Server("request-state")
FORM = {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}


@app.tool
async def survey(ctx: Context) -> str:
    state = ctx.request_state
    state["runs"] = state.get("runs", 0) + 1  # how often the handler ran for this call
    first = await ctx.elicit("first?", FORM, key="first")
    state.setdefault("first_seen_on_run", state["runs"])
    second = await ctx.elicit("second?", FORM, key="second")
    return (
        f"{first['content']['v']},{second['content']['v']} runs={state['runs']} "
        f"first_seen_on_run={state['first_seen_on_run']}"
    )


def _answer(value: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"v": value}}


async def test_state_travels_sealed_through_the_rounds() -> None:
    with trio.fail_after(10):
        async with open_client(
            app, protocol_version="2026-07-28", capabilities={"elicitation": {}}
        ) as client:
            one = await client.call_tool("survey")
            two = await client.request(
                "tools/call",
                {
                    "name": "survey",
                    "inputResponses": {"first": _answer("a")},
                    "requestState": one["requestState"],
                },
            )
            assert list(two["inputRequests"]) == ["second"]
            done = await client.request(
                "tools/call",
                {
                    "name": "survey",
                    "inputResponses": {"second": _answer("b")},
                    "requestState": two["requestState"],
                },
            )
            assert done["content"][0]["text"] == "a,b runs=3 first_seen_on_run=2"
            # The state is integrity protected: a changed byte is refused.
            forged = two["requestState"][:5] + ("A" if two["requestState"][5] != "A" else "B")
            forged += two["requestState"][6:]
            with pytest.raises(JSONRPCError) as info:
                await client.request(
                    "tools/call",
                    {"name": "survey", "inputResponses": {}, "requestState": forged},
                )
            assert info.value.code == -32602


async def test_handshake_era_state_is_a_plain_dict_for_the_call() -> None:
    async def answer(method: str, params: Any) -> Any:
        return _answer(params["message"][0])

    with trio.fail_after(10):
        async with open_client(app, capabilities={"elicitation": {}}, on_request=answer) as client:
            result = await client.call_tool("survey")
    assert result["content"][0]["text"] == "f,s runs=1 first_seen_on_run=1"


def test_sealed_state_is_bounded() -> None:
    from runtime.features import StateSealer

    with pytest.raises(ValueError, match="requestState"):
        StateSealer().seal("tools/call", "d", {}, None, {"big": "x" * 300_000})
