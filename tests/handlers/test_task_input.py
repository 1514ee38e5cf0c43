"""A task's input: answers leave the pending list at once (C6), several waiters do not wake
each other (C7), ``ctx.ask_all`` asks several things in one round, and a deferred-task tool
asks in the request before it becomes a task (``ctx.become_task``)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from runtime import Context, JSONRPCError, Server
from runtime.features import TaskRecord
from runtime.testing import open_client

TASKS_EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
FORM = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
ELICIT = {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": FORM}}
ACCEPT = {"action": "accept", "content": {"a": "x"}}


async def _wait_for(record: TaskRecord, count: int) -> None:
    await trio.testing.wait_all_tasks_blocked()
    assert len(record.input_requests) == count


async def test_answered_input_leaves_the_pending_list_before_the_ack() -> None:
    # C6: tasks/update acknowledges after provide(); a tasks/get right after the ack must
    # not list the answered key, and with nothing left the task is working again.
    record = TaskRecord(None, 60_000, 100)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(record.input, "k", ELICIT)
            await _wait_for(record, 1)
            assert record.status == "input_required"
            record.provide({"k": ACCEPT})
            # No checkpoint in between: what tasks/get would see right after the ack.
            assert record.input_requests == {}
            assert record.status == "working"


async def test_partial_answer_keeps_only_the_unanswered_key() -> None:
    record = TaskRecord(None, 60_000, 100)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(record.inputs, {"one": ELICIT, "two": ELICIT})
            await _wait_for(record, 2)
            record.provide({"one": ACCEPT})
            assert list(record.input_requests) == ["two"]
            assert record.status == "input_required"
            record.provide({"two": ACCEPT})
            assert record.status == "working"


async def test_two_waiters_do_not_wake_each_other() -> None:
    # C7: two concurrent waiters used to re-announce input_required to each other in a
    # loop (a core at 100%, a listen stream flooded with notifications/tasks).
    record = TaskRecord(None, 60_000, 100)
    changes: list[str] = []
    record.listeners.append(lambda task: changes.append(task.status))
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(record.input, "one", ELICIT)
            nursery.start_soon(record.input, "two", ELICIT)
            await trio.sleep(0.3)
            assert len(changes) <= 2, f"{len(changes)} status changes while idle"
            record.provide({"one": ACCEPT, "two": ACCEPT})
    assert record.status == "working"


app = Server("task-input-test")


@app.tool(task="optional")
async def pair(ctx: Context) -> str:
    answers = await ctx.ask_all({"left": ELICIT, "right": ELICIT})
    return f"{answers['left']['content']['a']}+{answers['right']['content']['a']}"


@app.tool
async def pair_inline(ctx: Context) -> str:
    answers = await ctx.ask_all({"left": ELICIT, "right": ELICIT})
    return f"{answers['left']['action']}+{answers['right']['action']}"


@app.tool(task="required", defer_task=True)
async def ask_then_work(ctx: Context) -> str:
    answer = await ctx.elicit("Name?", FORM, key="name")
    await ctx.become_task()
    await trio.sleep(0.01)
    return f"task done for {answer['content']['a']} (task={ctx.task is not None})"


async def _poll(client: Any, task_id: str, until: set[str]) -> dict[str, Any]:
    while True:
        task = await client.request("tasks/get", {"taskId": task_id})
        if task["status"] in until:
            return task  # type: ignore[no-any-return]
        await trio.sleep(0.01)


async def test_ask_all_in_one_round_and_partial_retry() -> None:
    with trio.fail_after(10):
        async with open_client(
            app, protocol_version="2026-07-28", capabilities={"elicitation": {}}
        ) as client:
            first = await client.call_tool("pair_inline")
            assert first["resultType"] == "input_required"
            assert set(first["inputRequests"]) == {"left", "right"}
            partial = await client.request(
                "tools/call",
                {
                    "name": "pair_inline",
                    "inputResponses": {"left": ACCEPT},
                    "requestState": first["requestState"],
                },
            )
            assert set(partial["inputRequests"]) == {"right"}  # only what is missing
            done = await client.request(
                "tools/call",
                {
                    "name": "pair_inline",
                    "inputResponses": {"right": {"action": "decline"}},
                    "requestState": partial["requestState"],
                },
            )
            assert done["content"][0]["text"] == "accept+decline"


async def test_ask_all_in_a_task_waits_for_every_answer() -> None:
    with trio.fail_after(10):
        async with open_client(
            app, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            created = await client.call_tool("pair")
            waiting = await _poll(client, created["taskId"], {"input_required"})
            while len(waiting["inputRequests"]) < 2:
                waiting = await _poll(client, created["taskId"], {"input_required"})
            await client.request(
                "tasks/update", {"taskId": created["taskId"], "inputResponses": {"left": ACCEPT}}
            )
            after = await client.request("tasks/get", {"taskId": created["taskId"]})
            assert after["status"] == "input_required"
            assert list(after["inputRequests"]) == ["right"]
            await client.request(
                "tasks/update", {"taskId": created["taskId"], "inputResponses": {"right": ACCEPT}}
            )
            done = await _poll(client, created["taskId"], {"completed", "failed"})
            assert done["result"]["content"][0]["text"] == "x+x"


async def test_deferred_task_asks_in_the_request_then_becomes_a_task() -> None:
    with trio.fail_after(10):
        async with open_client(
            app, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            first = await client.call_tool("ask_then_work")
            assert first["resultType"] == "input_required" and "taskId" not in first
            created = await client.request(
                "tools/call",
                {
                    "name": "ask_then_work",
                    "inputResponses": {"name": {"action": "accept", "content": {"a": "Ada"}}},
                    "requestState": first["requestState"],
                },
            )
            assert created["resultType"] == "task" and "requestState" not in created
            done = await _poll(client, created["taskId"], {"completed", "failed"})
            assert done["result"]["content"][0]["text"] == "task done for Ada (task=True)"


async def test_deferred_task_in_the_handshake_era_is_a_task_from_the_start() -> None:
    async def answer(method: str, params: Any) -> Any:
        return {"action": "accept", "content": {"a": "Bo"}}

    with trio.fail_after(10):
        async with open_client(app, capabilities={"elicitation": {}}, on_request=answer) as client:
            created = await client.request(
                "tools/call", {"name": "ask_then_work", "arguments": {}, "task": {}}
            )
            result = await client.request("tasks/result", {"taskId": created["task"]["taskId"]})
            assert result["content"][0]["text"] == "task done for Bo (task=True)"


async def test_tasks_methods_need_the_extension_declared() -> None:
    # C3: was -32602 "Unknown task"; the methods belong to the extension (SEP-2663).
    with trio.fail_after(10):
        async with open_client(
            app, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            created = await client.call_tool("pair")
        async with open_client(app, protocol_version="2026-07-28") as client:
            for method, params in (
                ("tasks/get", {"taskId": created["taskId"]}),
                ("tasks/update", {"taskId": created["taskId"], "inputResponses": {}}),
                ("tasks/cancel", {"taskId": created["taskId"]}),
                ("tasks/get", {}),
            ):
                with pytest.raises(JSONRPCError) as info:
                    await client.request(method, params)
                assert info.value.code == -32021, method
                assert info.value.data == {
                    "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
                }


async def test_a_required_task_tool_is_refused_without_the_extension() -> None:
    # C5: it used to run synchronously for a client that cannot hold a task.
    with trio.fail_after(10):
        async with open_client(
            app, protocol_version="2026-07-28", capabilities={"elicitation": {}}
        ) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("ask_then_work")
            assert info.value.code == -32021
            assert info.value.data == {
                "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
            }
            inline = await client.call_tool("pair")  # optional: runs inline
            assert inline["resultType"] == "input_required"
