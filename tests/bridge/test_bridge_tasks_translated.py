"""Tasks translated between the two task protocols (runtime/bridge/_tasks.py), with our server
upstream over TCP (a link without per-request streams: the remote's questions inside a task
are tied to it by the 2025-11-25 related-task ``_meta``) and our client downstream over
Streamable HTTP:

- a 2025-11-25 client (``params.task``, tasks/get, tasks/result, tasks/list, tasks/cancel)
  through the proxy to a 2026-07-28 remote (the tasks extension);
- a 2026-07-28 client declaring the extension (resultType task, tasks/get, tasks/update,
  tasks/cancel) through the proxy to a 2025-11-25 remote.

The task ids are the remote's (checked against its task table), statuses, results, errors,
input requests and cancellation cross both ways; what one protocol has and the other does
not is refused with a precise JSON-RPC error."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.bridge import proxy_server
from runtime.client import PeerError, Task, open_client

from ..transports.app import modern, modern_headers
from ..transports.http_client import request
from .task_upstream import upstream

RELATED = "io.modelcontextprotocol/related-task"
EXTENSION = "io.modelcontextprotocol/tasks"


def bare(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result without what our server adds on its hop."""
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta")}


async def wait_for(cancelled: list[str]) -> None:
    for _ in range(300):
        if cancelled:
            return
        await trio.sleep(0.01)
    raise AssertionError("the cancellation did not reach the remote")


async def test_a_handshake_clients_tasks_on_a_modern_remote() -> None:
    cancelled: list[str] = []
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"ok": True}}

    remote = upstream(cancelled)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(remote.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="modern", max_poll_interval=0.05)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="handshake", elicitation=elicit
            ) as client:
                caps = client.description.capabilities if client.description else {}
                assert caps["tasks"] == {
                    "list": {},
                    "cancel": {},
                    "requests": {"tools": {"call": {}}},
                }
                # params.task -> the remote's task, with the remote's id, as a 2025 Task.
                raw = await client.request(
                    "tools/call",
                    {"name": "build", "arguments": {"target": "x"}, "task": {"ttl": 60000}},
                )
                task = raw["task"]
                assert remote.tasks.peek(task["taskId"]) is not None
                assert task["status"] == "working"
                assert "ttl" in task and "ttlMs" not in task and "resultType" not in raw
                got = await client.request("tasks/get", {"taskId": task["taskId"]})
                assert got["taskId"] == task["taskId"]
                assert set(got) <= {
                    "taskId",
                    "status",
                    "statusMessage",
                    "createdAt",
                    "lastUpdatedAt",
                    "ttl",
                    "pollInterval",
                }
                result = await client.request("tasks/result", {"taskId": task["taskId"]})
                assert result["content"] == [{"type": "text", "text": "built x"}]
                assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
                done = await client.request("tasks/get", {"taskId": task["taskId"]})
                assert done["status"] == "completed" and "result" not in done
                # Input required: asked of our client while tasks/result waits, tied to the
                # task by the related-task _meta; answered upstream with tasks/update.
                confirm = await client.call_tool_as_task("confirm", {})
                assert isinstance(confirm, Task)
                answer = await client.task_result(confirm.task_id, timeout=10)
                assert answer["content"][0]["text"] == "accept {'ok': True}"
                assert [a["message"] for a in asked] == ["Go on?"]
                assert asked[0]["_meta"][RELATED] == {"taskId": confirm.task_id}
                # A failed task: its error on tasks/result.
                broken = await client.call_tool_as_task("broken", {})
                assert isinstance(broken, Task)
                with pytest.raises(PeerError) as failed:
                    await client.task_result(broken.task_id, timeout=10)
                assert (failed.value.code, failed.value.message) == (-32602, "no luck")
                assert failed.value.data == {"why": "testing"}
                assert (await client.get_task(broken.task_id)).status == "failed"
                # A call the remote answers at once: a completed task of ours holds it.
                inline = await client.call_tool_as_task("plain", {"word": "hi"})
                assert isinstance(inline, Task) and inline.status == "completed"
                assert (await client.task_result(inline.task_id))["content"] == [
                    {"type": "text", "text": "HI"}
                ]
                # tasks/list: every task made through this session.
                listed = {t.task_id for t in await client.list_tasks()}
                assert {task["taskId"], confirm.task_id, broken.task_id, inline.task_id} <= listed
                with pytest.raises(PeerError) as cursor:
                    await client.request("tasks/list", {"cursor": "nope"})
                assert cursor.value.code == -32602
                # tasks/cancel answers the cancelled task; a terminal one is refused.
                stuck = await client.call_tool_as_task("forever", {})
                assert isinstance(stuck, Task)
                cancelled_task = await client.cancel_task(stuck.task_id)
                assert cancelled_task["status"] == "cancelled"
                assert cancelled_task["taskId"] == stuck.task_id
                await wait_for(cancelled)
                with pytest.raises(PeerError) as again:
                    await client.cancel_task(stuck.task_id)
                assert again.value.code == -32602
                for unknown in ("no-such-task", "mcp-runtime-bridge-task:nope"):
                    with pytest.raises(PeerError) as missing:
                        await client.get_task(unknown)
                    assert missing.value.code == -32602
            nursery.cancel_scope.cancel()


async def test_a_modern_clients_tasks_on_a_handshake_remote() -> None:
    cancelled: list[str] = []
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"ok": True}}

    remote = upstream(cancelled)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(remote.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="modern", elicitation=elicit
            ) as client:
                caps = client.description.capabilities if client.description else {}
                assert EXTENSION in caps["extensions"]
                assert "tasks" not in caps
                # A task-capable tool becomes the remote's task (params.task upstream).
                raw = await client.request(
                    "tools/call", {"name": "build", "arguments": {"target": "y"}}
                )
                assert raw["resultType"] == "task"
                assert remote.tasks.peek(raw["taskId"]) is not None
                assert "ttlMs" in raw and "ttl" not in raw
                result = await client.task_result(raw["taskId"], timeout=10)
                assert result["content"] == [{"type": "text", "text": "built y"}]
                done = await client.request("tasks/get", {"taskId": raw["taskId"]})
                assert done["status"] == "completed"
                assert done["result"]["content"] == [{"type": "text", "text": "built y"}]
                assert RELATED not in (done["result"].get("_meta") or {})
                # call_tool polls the task and answers its input request (tasks/update): the
                # remote's elicitation, tied to the task by its related-task _meta over TCP.
                confirmed = await client.call_tool("confirm", {})
                assert confirmed.text == "accept {'ok': True}"
                assert [a["message"] for a in asked] == ["Go on?"]
                assert RELATED not in (asked[0].get("_meta") or {})
                # A failed task: its error inline.
                broken = await client.request("tools/call", {"name": "broken", "arguments": {}})
                for _ in range(200):
                    failed = await client.request("tasks/get", {"taskId": broken["taskId"]})
                    if failed["status"] != "working":
                        break
                    await trio.sleep(0.02)
                assert failed["status"] == "failed"
                assert failed["error"] == {
                    "code": -32602,
                    "message": "no luck",
                    "data": {"why": "testing"},
                }
                # A tool without task support runs at once, as before.
                assert (await client.call_tool("plain", {"word": "hi"})).text == "HI"
                # Cancellation: acknowledged, reaches the remote, the task reads cancelled.
                stuck = await client.request("tools/call", {"name": "forever", "arguments": {}})
                assert bare(await client.cancel_task(stuck["taskId"])) == {}
                await wait_for(cancelled)
                for _ in range(200):
                    state = await client.request("tasks/get", {"taskId": stuck["taskId"]})
                    if state["status"] == "cancelled":
                        break
                    await trio.sleep(0.02)
                assert state["status"] == "cancelled"
                assert bare(await client.cancel_task(stuck["taskId"])) == {}  # cooperative
                # What the 2026-07-28 protocol does not have, and what we did not make.
                for method in ("tasks/result", "tasks/list"):
                    with pytest.raises(PeerError) as nope:
                        await client.request(method, {"taskId": raw["taskId"]})
                    assert nope.value.code == -32601
                with pytest.raises(PeerError) as missing:
                    await client.request("tasks/get", {"taskId": "no-such-task"})
                assert missing.value.code == -32602
                with pytest.raises(PeerError) as stray:
                    await client.request(
                        "tasks/update", {"taskId": raw["taskId"], "inputResponses": {"x": {}}}
                    )
                assert stray.value.code == -32602
            nursery.cancel_scope.cancel()


async def test_a_required_task_tool_for_a_modern_client_without_the_extension() -> None:
    """SEP-2663 "Required Capabilities": a tool the handshake-era remote can only run as a
    task, called by a 2026-07-28 client that does not declare the extension (a raw POST):
    -32021 naming it, before anything reaches the remote; an optional one runs inline."""
    app = Server("upstream", "3.0.0")
    ran: list[str] = []

    @app.tool(task="required")
    async def must(ctx: Context) -> str:
        """Only as a task."""
        ran.append("must")
        return "done"

    @app.tool(task="optional")
    async def may(ctx: Context) -> str:
        """Either way."""
        ran.append("may")
        return "inline"

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            address = ("127.0.0.1", proxy_port)
            refused = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "must"),
                body=modern(1, "tools/call", {"name": "must", "arguments": {}}),
            )
            error = refused.json()["error"]
            assert error["code"] == -32021
            assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
            inline = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "may"),
                body=modern(2, "tools/call", {"name": "may", "arguments": {}}),
            )
            assert inline.json()["result"]["content"] == [{"type": "text", "text": "inline"}]
            assert ran == ["may"]
            nursery.cancel_scope.cancel()
