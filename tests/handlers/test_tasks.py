"""Tasks: the 2026-07-28 extension and the 2025-11-25 experimental tasks, one table."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import JSONRPCError
from runtime.cli import load_target
from runtime.testing import open_client

APP = load_target("examples/tasks.py")
TASKS_EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}


async def _poll(client: Any, task_id: str, until: set[str]) -> dict[str, Any]:
    while True:
        task = await client.request("tasks/get", {"taskId": task_id})
        if task["status"] in until:
            return task  # type: ignore[no-any-return]
        await trio.sleep(0.01)


async def test_modern_task_lifecycle() -> None:
    with trio.fail_after(10):
        async with open_client(
            APP, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            discover = await client.request("server/discover")
            assert discover["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
            created = await client.call_tool("build", {"target": "app"})
            assert created["resultType"] == "task" and created["status"] == "working"
            assert len(created["taskId"]) >= 32 and created["ttlMs"] > 0
            assert created["createdAt"].endswith("Z")
            done = await _poll(client, created["taskId"], {"completed"})
            assert done["resultType"] == "complete"
            assert done["result"]["content"][0]["text"] == "built app"


async def test_modern_task_input_through_tasks_update() -> None:
    with trio.fail_after(10):
        async with open_client(
            APP, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            created = await client.call_tool("deploy", {"environment": "prod"})
            waiting = await _poll(client, created["taskId"], {"input_required"})
            (key,) = waiting["inputRequests"]
            assert waiting["inputRequests"][key]["method"] == "elicitation/create"
            ack = await client.request(
                "tasks/update",
                {
                    "taskId": created["taskId"],
                    "inputResponses": {
                        key: {"action": "accept", "content": {"ok": True}},
                        "unknown-key": {"ignored": True},
                    },
                },
            )
            assert ack["resultType"] == "complete"
            done = await _poll(client, created["taskId"], {"completed"})
            assert done["result"]["content"][0]["text"] == "deployed to prod"


async def test_modern_cancel_and_unknown_ids() -> None:
    with trio.fail_after(10):
        async with open_client(
            APP, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            created = await client.call_tool("forever")
            ack = await client.request("tasks/cancel", {"taskId": created["taskId"]})
            assert set(ack) == {"resultType", "_meta"}
            task = await client.request("tasks/get", {"taskId": created["taskId"]})
            assert task["status"] == "cancelled"
            with pytest.raises(JSONRPCError) as info:
                await client.request("tasks/get", {"taskId": "guess"})
            assert info.value.code == -32602
            with pytest.raises(JSONRPCError) as info:
                await client.request("tasks/result", {"taskId": created["taskId"]})
            assert info.value.code == -32601  # a 2025-11-25 method


async def test_modern_client_without_the_extension_gets_the_result_inline() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28") as client:
            result = await client.call_tool("build", {"target": "lib"})
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"] == "built lib"


async def test_legacy_tasks() -> None:
    with trio.fail_after(10):
        async with open_client(APP) as client:
            caps = client.initialize_result["capabilities"]  # type: ignore[index]
            assert caps["tasks"] == {"requests": {"tools": {"call": {}}}, "list": {}, "cancel": {}}
            tools = {t["name"]: t for t in await client.list_tools()}
            assert tools["build"]["execution"] == {"taskSupport": "optional"}
            created = await client.request(
                "tools/call",
                {"name": "build", "arguments": {"target": "x"}, "task": {"ttl": 60000}},
            )
            task_id = created["task"]["taskId"]
            assert created["task"]["status"] == "working" and created["task"]["ttl"] == 60000
            result = await client.request("tasks/result", {"taskId": task_id})  # blocks
            assert result["content"][0]["text"] == "built x"
            assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
            listed = await client.request("tasks/list")
            assert [t["taskId"] for t in listed["tasks"]] == [task_id]
            with pytest.raises(JSONRPCError) as info:  # terminal: refuse (2025-11-25)
                await client.request("tasks/cancel", {"taskId": task_id})
            assert info.value.code == -32602
            with pytest.raises(JSONRPCError) as info:  # required tool without a task
                await client.call_tool("forever")
            assert info.value.code == -32601
            forever = await client.request(
                "tools/call", {"name": "forever", "arguments": {}, "task": {}}
            )
            cancelled = await client.request("tasks/cancel", {"taskId": forever["task"]["taskId"]})
            assert cancelled["status"] == "cancelled"
            plain = await client.call_tool("build", {"target": "inline"})
            assert plain["content"][0]["text"] == "built inline"


async def test_tasks_are_scoped_to_their_session() -> None:
    with trio.fail_after(10):
        async with open_client(APP) as first, open_client(APP) as second:
            created = await first.request(
                "tools/call", {"name": "forever", "arguments": {}, "task": {}}
            )
            with pytest.raises(JSONRPCError):
                await second.request("tasks/get", {"taskId": created["task"]["taskId"]})
            assert (await second.request("tasks/list"))["tasks"] == []


async def test_modern_listen_for_task_notifications() -> None:
    with trio.fail_after(10):
        async with open_client(
            APP, protocol_version="2026-07-28", capabilities=TASKS_EXT
        ) as client:
            created = await client.call_tool("deploy", {"environment": "qa"})
            task_id = created["taskId"]
            async with trio.open_nursery() as nursery:

                async def listen() -> None:
                    await client.request(
                        "subscriptions/listen", {"notifications": {"taskIds": [task_id, "nope"]}}
                    )

                nursery.start_soon(listen)
                ack = await client.wait_for_notification("notifications/subscriptions/acknowledged")
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}
                note = await client.wait_for_notification("notifications/tasks")
                assert note["params"]["taskId"] == task_id
                assert note["params"]["status"] == "input_required"
                assert "inputRequests" in note["params"]
                assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
                nursery.cancel_scope.cancel()


async def test_listen_for_tasks_needs_the_extension() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28") as client:
            with pytest.raises(JSONRPCError) as info:
                await client.request("subscriptions/listen", {"notifications": {"taskIds": ["x"]}})
    assert info.value.code == -32021
    assert info.value.data == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }


async def test_legacy_status_notifications() -> None:
    with trio.fail_after(10):
        async with open_client(APP) as client:
            created = await client.request(
                "tools/call", {"name": "build", "arguments": {"target": "n"}, "task": {}}
            )
            await client.request("tasks/result", {"taskId": created["task"]["taskId"]})
            note = await client.wait_for_notification("notifications/tasks/status")
            assert note["params"]["taskId"] == created["task"]["taskId"]
            assert note["params"]["status"] == "completed"


async def test_task_ids_are_visible_only_to_their_owner() -> None:
    from runtime.features import TaskTable

    table = TaskTable(max_tasks=2)
    async with trio.open_nursery() as nursery:
        table.nursery = nursery
        mine = table.create("alice|app")
        assert table.get(mine.task_id, "alice|app") is mine
        for stranger in ("mallory|app", None):
            with pytest.raises(JSONRPCError) as info:
                table.get(mine.task_id, stranger)
            assert info.value.message == "Unknown task"  # indistinguishable from unknown
        table.create(None)
        with pytest.raises(JSONRPCError) as info:  # bounded table
            table.create(None)
        assert info.value.code == -32010
        assert [t.task_id for t in table.owned_by("alice|app")] == [mine.task_id]
