"""2026-07-28 tasks (SEP-2663) across replicas on one Redis: a task created on one replica
is polled, answered (tasks/update) and cancelled through the others; a task whose replica
is killed reads as failed with a clear status once its lease runs out; kill -9 of a replica
under load leaves no acknowledged task unknown."""

from __future__ import annotations

import itertools
from typing import Any

import h11
import trio

from ..transports.app import MODERN, modern_headers
from ..transports.http_client import request
from .cluster import Cluster
from .test_failover import addr, replicas  # noqa: F401 - the fixture

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
_ids = itertools.count(1)


async def modern_request(cluster: Cluster, i: int, method: str, params: dict[str, Any]) -> Any:
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": TASKS,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    # Mcp-Name mirrors the tool's name, or a tasks/* request's taskId (SEP-2663).
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    response = await request(
        addr(cluster, i), "POST", headers=modern_headers(method, name), body=body
    )
    assert response.status == 200, (response, cluster.logs())
    return response.json()["result"]


async def create(cluster: Cluster, i: int, tool: str, **arguments: Any) -> str:
    created = await modern_request(cluster, i, "tools/call", {"name": tool, "arguments": arguments})
    assert created["resultType"] == "task", created
    return str(created["taskId"])


async def poll(cluster: Cluster, i: int, task_id: str, until: set[str]) -> dict[str, Any]:
    while True:
        task = await modern_request(cluster, i, "tasks/get", {"taskId": task_id})
        if task["status"] in until:
            return task  # type: ignore[no-any-return]
        await trio.sleep(0.05)


async def test_task_polled_answered_and_cancelled_through_other_replicas(
    replicas: Cluster,  # noqa: F811
) -> None:
    with trio.fail_after(30):
        task_id = await create(replicas, 0, "deploy", environment="prod")
        waiting = await poll(replicas, 1, task_id, {"input_required"})
        (key,) = waiting["inputRequests"]
        assert waiting["inputRequests"][key]["method"] == "elicitation/create"
        answer = {key: {"action": "accept", "content": {"ok": True}}}
        await modern_request(
            replicas, 2, "tasks/update", {"taskId": task_id, "inputResponses": answer}
        )
        done = await poll(replicas, 1, task_id, {"completed", "failed", "cancelled"})
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "deployed to prod on r0"

        endless = await create(replicas, 1, "forever")
        assert (await poll(replicas, 0, endless, {"working"}))["status"] == "working"
        await modern_request(replicas, 2, "tasks/cancel", {"taskId": endless})
        cancelled = await poll(replicas, 0, endless, {"cancelled", "completed", "failed"})
        assert cancelled["status"] == "cancelled"
        # Unknown ids stay unknown everywhere (-32602, not a hang, not a 5xx).
        body = {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tasks/get",
            "params": {
                "taskId": "nope",
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": TASKS,
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                },
            },
        }
        unknown = await request(
            addr(replicas, 2), "POST", headers=modern_headers("tasks/get", "nope"), body=body
        )
        assert unknown.json()["error"]["code"] == -32602


async def test_a_dead_replicas_task_fails_with_a_clear_status(
    replicas: Cluster,  # noqa: F811
) -> None:
    with trio.fail_after(30):
        task_id = await create(replicas, 2, "forever")
        assert (await poll(replicas, 0, task_id, {"working"}))["status"] == "working"
        killed = trio.current_time()
        replicas.kill_replica(2)
        failed = await poll(replicas, 0, task_id, {"failed", "completed", "cancelled"})
        assert failed["status"] == "failed"
        assert "lease expired" in failed["statusMessage"]
        assert failed["error"]["code"] == -32603
        assert trio.current_time() - killed < 10  # the lease (6 s) plus polling
        again = await modern_request(replicas, 1, "tasks/get", {"taskId": task_id})
        assert again["status"] == "failed"


async def test_kill_9_under_load_loses_no_acknowledged_task(
    replicas: Cluster,  # noqa: F811
) -> None:
    """Tasks are created round-robin on the three replicas while r1 is killed (-9): every
    task whose creation was acknowledged is then known on the survivors, completed (r0, r2)
    or failed with the lease status (r1): none is unknown, none stays working."""
    acknowledged: list[tuple[int, str]] = []
    with trio.fail_after(60):

        async def creator(n: int) -> None:
            for k in range(8):
                i = (n + k) % 3
                if replicas.procs[i] is None:
                    continue
                try:
                    task_id = await create(replicas, i, "build", target=f"{n}.{k}", seconds=1.0)
                except (OSError, trio.BrokenResourceError, h11.RemoteProtocolError):
                    # refused, reset, or cut mid-response by the dying replica: never
                    # acknowledged
                    continue
                acknowledged.append((i, task_id))
                await trio.sleep(0.05)

        async def killer() -> None:
            await trio.sleep(0.4)
            replicas.kill_replica(1)

        async with trio.open_nursery() as nursery:
            for n in range(4):
                nursery.start_soon(creator, n)
            nursery.start_soon(killer)
        outcomes: dict[str, int] = {}
        for i, task_id in acknowledged:
            final = await poll(replicas, 0, task_id, {"completed", "failed", "cancelled"})
            outcomes[final["status"]] = outcomes.get(final["status"], 0) + 1
            if i == 1 and final["status"] == "failed":
                assert "lease expired" in final["statusMessage"]
            else:
                assert final["status"] == "completed", (i, final)
    print(f"acknowledged={len(acknowledged)} outcomes={outcomes}")
    assert sum(1 for i, _ in acknowledged if i == 1) >= 1
    assert len(acknowledged) >= 20
