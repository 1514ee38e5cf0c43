"""Handshake-era tasks (MCP 2025-11-25 basic/utilities/tasks, ``params.task`` on tools/call)
across three replicas on one real redis-server: a task created on one replica is read
(tasks/get, tasks/list), answered (its elicitation, on a GET stream held by another replica),
awaited (tasks/result) and cancelled through the others, directly and through HAProxy
round-robin; a task whose replica is killed (-9) fails with a clear status; a 2026-07-28
listen on one replica hears the status changes of a task another runs."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import trio

from ..transports.app import modern, modern_headers
from ..transports.http_client import connect, open_raw_session, request, sse_messages
from ..transports.http_client import session_headers as headers
from .cluster import Cluster
from .servers import RedisServer
from .test_failover import addr, replicas  # noqa: F401 - the fixture
from .test_tasks_shared import TASKS, create, modern_request, poll

#: The client capabilities its sessions declare: the tasks here ask questions.
ELICITS: dict[str, Any] = {"elicitation": {}}
_ids = itertools.count(100)


async def rpc(where: tuple[str, int], session: str, method: str, **params: Any) -> Any:
    """One request of the session; its response (a dict with ``result`` or ``error``)."""
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    response = await request(where, "POST", headers=headers(session), body=body)
    assert response.status == 200, response
    found = response.json() if response.body[:1] == b"{" else sse_messages(response.body)[-1]
    assert found["id"] == body["id"], found
    return found


async def result_of(where: tuple[str, int], session: str, method: str, **params: Any) -> Any:
    answer = await rpc(where, session, method, **params)
    assert "result" in answer, answer
    return answer["result"]


async def legacy_poll(
    where: tuple[str, int], session: str, task_id: str, until: set[str]
) -> dict[str, Any]:
    while True:
        task = await result_of(where, session, "tasks/get", taskId=task_id)
        if task["status"] in until:
            return task  # type: ignore[no-any-return]
        await trio.sleep(0.05)


async def test_a_task_is_read_answered_awaited_and_cancelled_through_other_replicas(
    replicas: Cluster,  # noqa: F811
) -> None:
    r0, r1, r2 = (addr(replicas, i) for i in range(3))
    with trio.fail_after(60):
        session = await open_raw_session(r0, initialized_at=r1, capabilities=ELICITS)
        # The GET stream is held by r1; the task runs on r0 and asks the client there.
        stream = await connect(r1)
        await stream.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
        assert (await stream.head()).status == 200
        created = await result_of(
            r0, session, "tools/call", name="deploy", arguments={"environment": "prod"}, task={}
        )
        task_id = created["task"]["taskId"]
        assert created["task"]["status"] in ("working", "input_required")  # it runs at once
        # input_required, read on r2 (2025-11-25 "Input Required Status").
        waiting = await legacy_poll(r2, session, task_id, {"input_required"})
        assert waiting["statusMessage"] == "waiting for input"
        assert "inputRequests" not in waiting and waiting["ttl"] == created["task"]["ttl"]
        # The elicitation reaches the GET stream on r1, tied to its task.
        statuses: list[str] = []

        def status_of(message: dict[str, Any]) -> None:
            if message.get("method") == "notifications/tasks/status":
                assert message["params"]["taskId"] == task_id
                statuses.append(message["params"]["status"])

        while True:
            event = await stream.next_event()
            assert event is not None
            if event.data:
                asked = msgspec.json.decode(event.data)
                if asked.get("method") == "elicitation/create":
                    break
                status_of(asked)
        meta = asked["params"]["_meta"]
        assert meta["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        assert asked["params"]["message"] == "Deploy to prod?"
        # tasks/result on r1 blocks while the answer is POSTed to r2.
        outcome: dict[str, Any] = {}

        async def await_result() -> None:
            outcome.update(await rpc(r1, session, "tasks/result", taskId=task_id))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(await_result)
            await trio.sleep(0.3)
            assert not outcome  # still blocked: the task is not terminal
            answer = {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"action": "accept", "content": {"ok": True}},
            }
            posted = await request(r2, "POST", headers=headers(session), body=answer)
            assert posted.status == 202, posted
        result = outcome["result"]
        assert result["content"][0]["text"] == "deployed to prod on r0"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        done = await result_of(r2, session, "tasks/get", taskId=task_id)
        assert done["status"] == "completed"
        # The status notifications went to the GET stream too (r0 -> r1 through the bus).
        while "completed" not in statuses:
            event = await stream.next_event()
            assert event is not None
            if event.data:
                status_of(msgspec.json.decode(event.data))
        # Each change once, in order (2025-11-25 "Task Status Lifecycle").
        assert statuses == ["input_required", "working", "completed"], statuses
        await stream.aclose()

        # Cancelled on r2, run on r1: cancelled before the answer (2025-11-25 MUST).
        endless = await result_of(r1, session, "tools/call", name="forever", arguments={}, task={})
        endless_id = endless["task"]["taskId"]
        cancelled = await result_of(r2, session, "tasks/cancel", taskId=endless_id)
        assert cancelled["status"] == "cancelled" and cancelled["taskId"] == endless_id
        assert (await result_of(r0, session, "tasks/get", taskId=endless_id))["status"] == (
            "cancelled"
        )
        again = await rpc(r0, session, "tasks/cancel", taskId=endless_id)
        assert again["error"]["code"] == -32602  # terminal: refused
        gone = await rpc(r0, session, "tasks/result", taskId=endless_id)
        assert gone["error"]["code"] == -32602 and "cancelled" in gone["error"]["message"]
        # tasks/list on any replica lists the session's tasks, wherever they run.
        for where in (r0, r1, r2):
            listed = await result_of(where, session, "tasks/list")
            assert {t["taskId"]: t["status"] for t in listed["tasks"]} == {
                task_id: "completed",
                endless_id: "cancelled",
            }
        # Another session sees none of them, on any replica.
        other = await open_raw_session(r2, initialized_at=r2, capabilities=ELICITS)
        for where in (r0, r1, r2):
            hidden = await rpc(where, other, "tasks/get", taskId=task_id)
            assert hidden["error"]["code"] == -32602
            assert (await result_of(where, other, "tasks/list"))["tasks"] == []


async def test_a_dead_replicas_task_fails_with_a_clear_status(
    replicas: Cluster,  # noqa: F811
) -> None:
    r0, r1 = addr(replicas, 0), addr(replicas, 1)
    with trio.fail_after(40):
        session = await open_raw_session(r0, initialized_at=r0, capabilities=ELICITS)
        created = await result_of(
            addr(replicas, 2), session, "tools/call", name="forever", arguments={}, task={}
        )
        task_id = created["task"]["taskId"]
        assert (await result_of(r0, session, "tasks/get", taskId=task_id))["status"] == "working"
        outcome: dict[str, Any] = {}

        async def await_result() -> None:
            outcome.update(await rpc(r1, session, "tasks/result", taskId=task_id))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(await_result)
            await trio.sleep(0.3)
            killed = trio.current_time()
            replicas.kill_replica(2)
        # tasks/result on r1 ends with the task's error once the lease ran out.
        assert trio.current_time() - killed < 10  # the lease (6 s) plus polling
        error = outcome["error"]
        assert error["code"] == -32603
        assert "lease expired" in error["message"]
        failed = await result_of(r0, session, "tasks/get", taskId=task_id)
        assert failed["status"] == "failed"
        assert failed["statusMessage"] == (
            "the replica running this task stopped (its lease expired)"
        )
        listed = await result_of(r0, session, "tasks/list")
        assert [(t["taskId"], t["status"]) for t in listed["tasks"]] == [(task_id, "failed")]


async def test_through_haproxy_round_robin(cluster: Cluster) -> None:
    """The same conversation through the balancer: each request to the next replica."""
    where = ("127.0.0.1", cluster.port)
    before = {row["svname"]: int(row["stot"]) for row in cluster.servers()}
    with trio.fail_after(60):
        session = await open_raw_session(where, initialized_at=where, capabilities=ELICITS)
        built = await result_of(
            where,
            session,
            "tools/call",
            name="build",
            arguments={"target": "x", "seconds": 1.0},
            task={"ttl": 60000},
        )
        task_id = built["task"]["taskId"]
        # Three reads: one on each replica (round-robin), the runner's and two others.
        for _ in range(3):
            got = await result_of(where, session, "tasks/get", taskId=task_id)
            assert got["taskId"] == task_id and got["status"] in ("working", "completed")
        result = await result_of(where, session, "tasks/result", taskId=task_id)
        assert result["content"][0]["text"].startswith("built x on r")
        endless = await result_of(
            where, session, "tools/call", name="forever", arguments={}, task={}
        )
        endless_id = endless["task"]["taskId"]
        cancelled = await result_of(where, session, "tasks/cancel", taskId=endless_id)
        assert cancelled["status"] == "cancelled"
        for _ in range(3):
            listed = await result_of(where, session, "tasks/list")
            assert {t["taskId"]: t["status"] for t in listed["tasks"]} == {
                task_id: "completed",
                endless_id: "cancelled",
            }
    backend = cluster.backend()
    assert int(backend["hrsp_4xx"]) == 0 and int(backend["hrsp_5xx"]) == 0, cluster.logs()
    after = {row["svname"]: int(row["stot"]) for row in cluster.servers()}
    # Every replica served several of these requests: nothing was sticky.
    assert all(after[name] - before[name] >= 3 for name in after), (before, after)


async def test_a_listen_hears_a_task_run_on_another_replica(
    replicas: Cluster,  # noqa: F811
) -> None:
    """2026-07-28 ``subscriptions/listen`` on r0 watching a task r1 runs: the current state
    first, then each status change, as ``notifications/tasks`` (SEP-2663)."""
    with trio.fail_after(30):
        task_id = await create(replicas, 1, "deploy", environment="qa")
        await poll(replicas, 2, task_id, {"input_required"})
        listen = await connect(addr(replicas, 0))
        body = modern(1, "subscriptions/listen", {"notifications": {"taskIds": [task_id, "nope"]}})
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = TASKS
        await listen.send("POST", "/mcp", headers=modern_headers("subscriptions/listen"), body=body)
        assert (await listen.head()).status == 200
        heard: list[dict[str, Any]] = []

        async def until(status: str) -> None:
            while not heard or heard[-1].get("status") != status:
                event = await listen.next_event()
                assert event is not None
                if event.data:
                    message = msgspec.json.decode(event.data)
                    if message["method"] == "notifications/subscriptions/acknowledged":
                        assert message["params"]["notifications"] == {"taskIds": [task_id]}
                    heard.append(message["params"] | {"method": message["method"]})

        await until("input_required")
        (key,) = heard[-1]["inputRequests"]
        answer = {key: {"action": "accept", "content": {"ok": True}}}
        await modern_request(
            replicas, 2, "tasks/update", {"taskId": task_id, "inputResponses": answer}
        )
        await until("completed")
        await listen.aclose()
    tasks = [h for h in heard if h["method"] == "notifications/tasks"]
    assert all(t["taskId"] == task_id for t in tasks)
    assert tasks[0]["status"] == "input_required"
    assert tasks[-1]["result"]["content"][0]["text"] == "deployed to qa on r1"
    assert tasks[-1]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1


async def test_a_listen_hears_that_a_dead_replicas_task_failed(
    replicas: Cluster,  # noqa: F811
) -> None:
    """The replica running a watched task is killed (-9): nothing is published any more,
    yet the listen on another replica hears the task failed once its lease ran out."""
    with trio.fail_after(30):
        task_id = await create(replicas, 1, "forever")
        listen = await connect(addr(replicas, 0))
        body = modern(1, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = TASKS
        await listen.send("POST", "/mcp", headers=modern_headers("subscriptions/listen"), body=body)
        assert (await listen.head()).status == 200
        statuses: list[str] = []

        async def until(status: str) -> None:
            while status not in statuses:
                event = await listen.next_event()
                assert event is not None
                if event.data:
                    message = msgspec.json.decode(event.data)
                    if message["method"] == "notifications/tasks":
                        statuses.append(message["params"]["status"])
                        last.update(message["params"])

        last: dict[str, Any] = {}
        await until("working")
        killed = trio.current_time()
        replicas.kill_replica(1)
        await until("failed")
        assert trio.current_time() - killed < 12  # the lease (6 s) and a recheck (2 s)
        assert last["statusMessage"] == "the replica running this task stopped (its lease expired)"
        assert last["error"]["code"] == -32603
        await listen.aclose()


async def test_through_haproxy_a_killed_runners_task_fails(cluster: Cluster) -> None:
    """Through the balancer: a task asks the client, naming the replica that runs it; that
    replica is killed (-9); the survivors answer tasks/get and tasks/result with the task
    failed (lease expired), never ``working`` or ``input_required`` forever."""
    where = ("127.0.0.1", cluster.port)
    with trio.fail_after(60):
        session = await open_raw_session(where, initialized_at=where, capabilities=ELICITS)
        stream = await connect(where)
        await stream.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
        assert (await stream.head()).status == 200
        created = await result_of(
            where, session, "tools/call", name="standby", arguments={}, task={}
        )
        task_id = created["task"]["taskId"]
        while True:
            event = await stream.next_event()
            assert event is not None
            if event.data:
                asked = msgspec.json.decode(event.data)
                if asked.get("method") == "elicitation/create":
                    break
        runner = asked["params"]["message"].removeprefix("standing by on ")
        await stream.aclose()
        waiting = await result_of(where, session, "tasks/get", taskId=task_id)
        assert waiting["status"] == "input_required"
        killed = trio.current_time()
        cluster.kill_replica(int(runner[1:]))
        failed = await legacy_poll(where, session, task_id, {"failed", "completed", "cancelled"})
        assert trio.current_time() - killed < 12  # the lease (6 s) plus polling
        assert failed["status"] == "failed"
        assert failed["statusMessage"] == (
            "the replica running this task stopped (its lease expired)"
        )
        ended = await rpc(where, session, "tasks/result", taskId=task_id)
        assert ended["error"]["code"] == -32603 and "lease expired" in ended["error"]["message"]
        listed = await result_of(where, session, "tasks/list")
        assert [(t["taskId"], t["status"]) for t in listed["tasks"]] == [(task_id, "failed")]
    print(f"runner={runner} failed after {trio.current_time() - killed:.1f}s")


async def test_redis_gone_and_back_under_a_running_task() -> None:
    """Redis stops while r0 runs a session's task: r1 answers tasks/* for it with a clear
    -32603 (never a hang, never a wrong "unknown"); r0 still answers from its own table.
    Redis comes back empty (no persistence): r0's next lease renewal writes the task again
    and r1 finds it, without restarting anything."""
    redis = RedisServer().start()
    two = Cluster(redis.url, replicas=2)
    try:
        for i in range(2):
            two.start_replica(i)
        r0, r1 = addr(two, 0), addr(two, 1)
        with trio.fail_after(60):
            session = await open_raw_session(r0, initialized_at=r1, capabilities=ELICITS)
            created = await result_of(
                r0, session, "tools/call", name="forever", arguments={}, task={}
            )
            task_id = created["task"]["taskId"]
            assert (await result_of(r1, session, "tasks/get", taskId=task_id))[
                "status"
            ] == "working"
            redis.stop()
            start = trio.current_time()
            for method in ("tasks/get", "tasks/result", "tasks/cancel", "tasks/list"):
                params = {} if method == "tasks/list" else {"taskId": task_id}
                answer = await rpc(r1, session, method, **params)
                assert answer["error"]["code"] == -32603, (method, answer)
                assert "Task store unavailable" in answer["error"]["message"]
            assert trio.current_time() - start < 8  # each bounded by the store timeout
            local = await result_of(r0, session, "tasks/get", taskId=task_id)
            assert local["status"] == "working"
            redis.start()
            while True:
                again = await rpc(r1, session, "tasks/get", taskId=task_id)
                if "result" in again:
                    break
                await trio.sleep(0.2)  # unavailable, then unknown until r0 renews
            assert again["result"]["status"] == "working"
            listed = await result_of(r1, session, "tasks/list")
            assert [t["taskId"] for t in listed["tasks"]] == [task_id]
    finally:
        two.stop()
        redis.stop()


async def test_a_tasks_progress_reaches_the_get_stream_on_another_replica(
    replicas: Cluster,  # noqa: F811
) -> None:
    """2025-11-25 "Task Progress Notifications": the progressToken of the creating request
    stays valid for the task's life; its notifications reach the session's GET stream (held
    by r1) although the task runs on r2 and its creating POST was answered long before."""
    r0, r1, r2 = (addr(replicas, i) for i in range(3))
    with trio.fail_after(30):
        session = await open_raw_session(r0, initialized_at=r0, capabilities=ELICITS)
        stream = await connect(r1)
        await stream.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
        assert (await stream.head()).status == 200
        created = await result_of(
            r2,
            session,
            "tools/call",
            name="steps",
            arguments={"n": 3},
            task={},
            _meta={"progressToken": "p1"},
        )
        task_id = created["task"]["taskId"]
        progress: list[tuple[float, str]] = []
        while len(progress) < 3:
            event = await stream.next_event()
            assert event is not None
            if event.data:
                message = msgspec.json.decode(event.data)
                if message.get("method") == "notifications/progress":
                    assert message["params"]["progressToken"] == "p1"
                    progress.append((message["params"]["progress"], message["params"]["message"]))
        assert progress == [(1, "step 1 on r2"), (2, "step 2 on r2"), (3, "step 3 on r2")]
        result = await result_of(r0, session, "tasks/result", taskId=task_id)
        assert result["content"][0]["text"] == "3 steps on r2"
        await stream.aclose()
