"""C8: input responses reach the handler only in the shape of what it asked for; anything
else is -32602, in an input_required retry and in tasks/update (SEP-2322)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Context, JSONRPCError, Server
from runtime.testing import open_client

app = Server("input-validation")
seen: list[Any] = []


@app.tool(task="optional")
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit("Name?", {"type": "object", "properties": {}}, key="name")
    seen.append(answer)
    return f"hello {answer.get('content')}"


@app.tool
async def ask_model(ctx: Context) -> str:
    answer = await ctx.sample([], max_tokens=5, key="model")
    seen.append(answer)
    return "sampled"


BAD_ELICIT = [42, {"action": "maybe"}, {"action": "accept", "content": "text"}]


async def test_a_retry_with_a_wrong_shaped_answer_is_32602() -> None:
    caps = {"elicitation": {}, "sampling": {}}
    seen.clear()
    with trio.fail_after(10):
        async with open_client(app, protocol_version="2026-07-28", capabilities=caps) as client:
            states = {}
            for tool in ("ask_name", "ask_model"):
                first = await client.request("tools/call", {"name": tool})
                assert first["resultType"] == "input_required"
                states[tool] = first["requestState"]  # answers come back with it (issue 16)
            for tool, key, bad in [("ask_name", "name", b) for b in BAD_ELICIT] + [
                ("ask_model", "model", {"text": "no role"}),
                ("ask_model", "model", "a string"),
            ]:
                retry = {"name": tool, "inputResponses": {key: bad}, "requestState": states[tool]}
                with pytest.raises(JSONRPCError) as info:
                    await client.request("tools/call", retry)
                assert info.value.code == -32602, (tool, bad)
                assert key in info.value.message
            ok = await client.request(
                "tools/call",
                {
                    "name": "ask_name",
                    "inputResponses": {"name": {"action": "decline"}},
                    "requestState": states["ask_name"],
                },
            )
            assert ok["content"][0]["text"] == "hello None"
    assert seen == [{"action": "decline"}]  # nothing malformed reached the handler


async def test_tasks_update_with_a_wrong_shaped_answer_is_32602_and_the_input_stays() -> None:
    caps = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
    with trio.fail_after(10):
        async with open_client(app, protocol_version="2026-07-28", capabilities=caps) as client:
            created = await client.call_tool("ask_name")
            task_id = created["taskId"]
            task = await client.request("tasks/get", {"taskId": task_id})
            while task["status"] != "input_required":
                await trio.sleep(0.01)
                task = await client.request("tasks/get", {"taskId": task_id})
            with pytest.raises(JSONRPCError) as info:
                await client.request(
                    "tasks/update", {"taskId": task_id, "inputResponses": {"name": 7}}
                )
            assert info.value.code == -32602
            task = await client.request("tasks/get", {"taskId": task_id})
            assert task["status"] == "input_required" and list(task["inputRequests"]) == ["name"]
