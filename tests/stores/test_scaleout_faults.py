"""Scale-out under failure: ``mcp-runtime serve`` replicas on a real redis-server, run as
docs/deploy.md runs it (``examples/deploy/redis.conf``), behind a real HAProxy with the
documented checks (``examples/deploy/haproxy.cfg``) where the balancer matters.

- a replica killed (-9) while a call's answer streams: the official SDK, resuming on
  another replica, gets the call's error within about twice the lease (not an empty stream
  again and again); a stream resumed on another replica while its producer lives follows
  it to its answer;
- Redis killed (-9) and restarted: no acknowledged session or task result is lost;
- Redis down behind HAProxy: every replica stays in rotation and stateless (2026-07-28)
  traffic is served throughout; what needs the store gets the replica's own 503;
- a slow Redis (``CLIENT PAUSE ... WRITE``): no session id is handed out unless stored;
- task-store errors: the client gets a correlation id, the log the details;
- a session's stored events expire with it.

Leases are short here (``?lease=``) so that the suite stays within about a minute.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import trio

from runtime import Server
from runtime.stores import RedisClient, RedisStore
from runtime.transports.http import HttpLimits

from ..transports.app import call, init_body, modern, modern_headers, serving
from ..transports.http_client import connect, open_raw_session, request
from ..transports.http_client import session_headers as headers
from .cluster import HERE, Cluster
from .servers import RedisServer
from .test_tasks_shared import TASKS

#: The lease of these tests' replicas (seconds; the default is 6).
LEASE = 1.5
#: The SSE ``retry`` the replicas send (ms): a client resumes this long after losing a stream.
RETRY = 1.0


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    """A redis-server of the test's own, to kill, pause and restart."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


def where(cluster: Cluster, i: int) -> tuple[str, int]:
    return ("127.0.0.1", cluster.ports[i])


def balancer(cluster: Cluster) -> tuple[str, int]:
    return ("127.0.0.1", cluster.port)


async def modern_call(address: tuple[str, int], request_id: int, tool: str, **args: Any) -> Any:
    body = modern(request_id, "tools/call", {"name": tool, "arguments": args})
    return await request(address, "POST", headers=modern_headers("tools/call", tool), body=body)


async def task_request(address: tuple[str, int], method: str, params: dict[str, Any]) -> Any:
    """A 2026-07-28 request of a client with the tasks extension; the whole response."""
    body = modern(1, method, params)
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = TASKS
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    return await request(address, "POST", headers=modern_headers(method, name), body=body)


# -- a replica killed mid-stream ---------------------------------------------------------------


async def test_sdk_gets_the_error_of_a_call_whose_replica_was_killed_mid_stream(
    redis: RedisServer,
) -> None:
    """The official SDK calls ``crawl`` through HAProxy (progress every 0.2 s); once the
    first progress names the replica running it, that replica is killed (-9). The SDK
    resumes the POST's stream with ``Last-Event-ID`` on a survivor, which follows it in the
    store: when the dead replica's lease on the stream runs out, the call's error comes on
    the stream, within about twice the lease of the kill."""
    cluster = Cluster(redis.url, store_options=f"?lease={LEASE}")
    try:
        cluster.start()
        command = [sys.executable, str(HERE / "sdk_resume_client.py"), cluster.url, "500", "0.2"]
        client = await trio.lowlevel.open_process(
            command, stdout=subprocess.PIPE, stderr=(cluster.dir / "sdk.log").open("ab")
        )
        try:
            with trio.fail_after(60):
                assert client.stdout is not None
                lines = _lines(client.stdout)
                first = await anext(lines)
                victim = re.fullmatch(r"step 1 on r(\d)", first["progress"])
                assert victim is not None, first
                cluster.kill_replica(int(victim.group(1)))
                killed = time.monotonic()
                outcome = await anext(line async for line in lines if "progress" not in line)
                assert await client.wait() == 0
        finally:
            if client.returncode is None:
                client.kill()
                await client.wait()
        assert outcome.get("error") == {
            "code": -32603,
            "message": "the replica running this request stopped (its lease expired)",
        }, (outcome, cluster.logs())
        waited = outcome["at"] - killed
        print(f"lease={LEASE}s error after the kill: {waited:.2f}s")
        # The lease, the client's retry delay, a poll of the store, and some slack.
        assert waited < 2 * LEASE + RETRY + 1.0, (waited, cluster.logs())
        assert "stream producer gone (lease expired)" in cluster.logs()
    finally:
        cluster.stop()


async def _lines(stream: trio.abc.ReceiveStream) -> Any:
    """The JSON lines a subprocess writes, as they come."""
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


async def test_a_post_stream_resumed_on_another_replica_follows_it_to_its_answer(
    redis: RedisServer,
) -> None:
    """r0 runs ``crawl``; the client drops the POST's stream after two progress events and
    resumes on r1, which does not run it: r1 writes the events the client missed and those
    that follow, as r0 stores them, then the answer, and ends the stream; nothing twice."""
    cluster = Cluster(redis.url, replicas=2, store_options=f"?lease={LEASE}")
    try:
        for i in range(2):
            cluster.start_replica(i)
        with trio.fail_after(30):
            session = await open_raw_session(where(cluster, 0))
            post = await connect(where(cluster, 0))
            body = call(2, "crawl", progress="t", steps=8, delay=0.25)
            await post.send("POST", "/mcp", headers=headers(session, accept="text/event-stream"),
                            body=body)  # fmt: skip
            assert (await post.head()).status == 200
            seen: list[str] = []
            last = ""
            while len(seen) < 2:
                event = await post.next_event()
                assert event is not None
                last = event.id or last
                if event.data:
                    seen.append(msgspec.json.decode(event.data)["params"]["message"])
            await post.aclose()
            resumed = await connect(where(cluster, 1))
            await resumed.send(
                "GET", "/mcp",
                headers=headers(session, accept="text/event-stream", **{"last-event-id": last}),
            )  # fmt: skip
            assert (await resumed.head()).status == 200
            events = await resumed.events()  # to the stream's end
        messages = [msgspec.json.decode(e.data) for e in events if e.data]
        progress = [m["params"]["message"] for m in messages if "method" in m]
        assert seen + progress == [f"step {k} on r0" for k in range(1, 9)], (seen, progress)
        assert messages[-1] == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"content": [{"type": "text", "text": "crawled 8 on r0"}],
                       "isError": False},
        }  # fmt: skip
        ids = [e.id for e in events if e.id]
        assert len(ids) == len(set(ids)) == 7
    finally:
        cluster.stop()


# -- Redis restarted ---------------------------------------------------------------------------


async def test_a_redis_restart_loses_no_acknowledged_session_or_task_result(
    redis: RedisServer,
) -> None:
    """A session only r0 has seen and a finished task's result, both acknowledged; Redis
    is killed (-9) at once and restarted as documented (its append-only file): r1 serves
    the session (no 404) and r2 answers the task's result (not "Unknown task")."""
    cluster = Cluster(redis.url)
    try:
        for i in range(3):
            cluster.start_replica(i)
        with trio.fail_after(40):
            session = await open_raw_session(where(cluster, 0))
            created = await task_request(
                where(cluster, 0), "tools/call", {"name": "build", "arguments": {"target": "x"}}
            )
            task_id = created.json()["result"]["taskId"]
            while True:
                got = await task_request(where(cluster, 0), "tasks/get", {"taskId": task_id})
                if got.json()["result"]["status"] == "completed":
                    break
                await trio.sleep(0.05)
            redis.stop()
            redis.start()

            # Each replica reconnects on its first call after its backoff: until then a
            # call gets "... store unavailable" (503, or a -32603 error), never a 404.
            while True:
                served = await request(where(cluster, 1), "POST", headers=headers(session),
                                       body=call(2, "add", a=1, b=2))  # fmt: skip
                if served.status != 503:
                    break
                await trio.sleep(0.1)
            assert served.status == 200, (served, cluster.logs())
            assert served.json()["result"]["content"][0]["text"] == "3"
            while True:
                result = await task_request(where(cluster, 2), "tasks/get", {"taskId": task_id})
                error = result.json().get("error", {}).get("message", "")
                if not error.startswith("Task store unavailable"):
                    break
                await trio.sleep(0.1)
            assert result.json()["result"]["status"] == "completed", result.json()
            text = result.json()["result"]["result"]["content"][0]["text"]
            assert text == "built x on r0"
    finally:
        cluster.stop()


# -- Redis down behind HAProxy -------------------------------------------------------------------


async def test_stateless_traffic_goes_on_through_haproxy_while_redis_is_down(
    redis: RedisServer,
) -> None:
    """Three replicas behind the documented HAProxy config; Redis is stopped for 4 s (the
    checks run every 0.5 s here, one failure takes a replica out). Every 2026-07-28 request
    through HAProxy is answered 200 throughout, no replica leaves the rotation, readiness
    says "degraded", and a new handshake session gets the replica's 503 + Retry-After
    (a JSON-RPC error), not HAProxy's; once Redis is back, sessions open again."""
    cluster = Cluster(redis.url)
    try:
        cluster.start()
        front = balancer(cluster)
        statuses: dict[int, int] = {}
        with trio.fail_after(60):
            held = await open_raw_session(front)
            redis.stop()
            stopped = trio.current_time()

            async def stateless(n: int) -> None:
                request_id = 0
                while trio.current_time() - stopped < 4.0:
                    request_id += 1
                    got = await modern_call(front, request_id, "add", a=n, b=request_id)
                    statuses[got.status] = statuses.get(got.status, 0) + 1
                    assert got.status == 200, (got, cluster.servers())
                    text = got.json()["result"]["content"][0]["text"]
                    assert text == str(n + request_id)

            async with trio.open_nursery() as nursery:
                for n in range(3):
                    nursery.start_soon(stateless, n)
                await trio.sleep(2.5)  # past the replicas' PING (1 s) and HAProxy's checks
                refused = await request(front, "POST", body=init_body())
                assert refused.status == 503, refused
                assert refused.headers["retry-after"] == "1"
                error = refused.json()["error"]
                assert (error["code"], error["message"]) == (-32603, "Session store unavailable")
                assert "mcp-session-id" not in refused.headers
                for i in range(3):
                    ready = await request(where(cluster, i), "GET", "/readyz")
                    assert (ready.status, ready.json()) == (
                        200,
                        {"ready": True, "degraded": "store unreachable"},
                    )
                assert [row["status"] for row in cluster.servers()] == ["UP"] * 3
            redis.start()
            refusals = 1
            while (reopened := await request(front, "POST", body=init_body())).status != 200:
                assert reopened.status == 503, reopened  # until each replica reconnected
                refusals += 1
                await trio.sleep(0.1)
            # The session opened before the outage goes on on whichever replica (adopted).
            for request_id in range(2, 5):
                got = await request(front, "POST", headers=headers(held),
                                    body=call(request_id, "add", a=1, b=1))  # fmt: skip
                assert got.status == 200, got
        print(f"during the outage: {statuses}")
        assert sum(statuses.values()) >= 30
        # Every 5xx through HAProxy was a replica's refusal of an initialize (none its own).
        assert int(cluster.backend()["hrsp_5xx"]) == refusals
    finally:
        cluster.stop()


# -- a slow Redis ------------------------------------------------------------------------------


async def test_a_slow_redis_never_hands_out_an_unsaved_session(redis: RedisServer) -> None:
    """Redis pauses every write (``CLIENT PAUSE ... WRITE``) for longer than the store's
    timeout: ``initialize`` subscribes (not a write) but cannot save its session. It gets
    503 + Retry-After and the JSON-RPC error, with no session id; a stateless request is
    served meanwhile. After the pause, a new session's id works on the other replica."""
    cluster = Cluster(redis.url, replicas=2, store_options="?timeout=0.3")
    try:
        for i in range(2):
            cluster.start_replica(i)
        with trio.fail_after(30):
            assert redis.command("CLIENT", "PAUSE", "2000", "WRITE") == b"+OK\r\n"
            refused = await request(where(cluster, 0), "POST", body=init_body())
            assert refused.status == 503, (refused, cluster.logs())
            assert refused.headers["retry-after"] == "1"
            assert "mcp-session-id" not in refused.headers
            error = refused.json()["error"]
            assert (error["code"], error["message"]) == (-32603, "Session store unavailable")
            assert refused.json()["id"] == 1
            stateless = await modern_call(where(cluster, 0), 2, "add", a=2, b=3)
            assert stateless.status == 200 and "5" in stateless.body.decode()
            redis.command("CLIENT", "UNPAUSE")
            while True:
                opened = await request(where(cluster, 0), "POST", body=init_body())
                if opened.status == 200:
                    break
                assert opened.status == 503 and "mcp-session-id" not in opened.headers
                await trio.sleep(0.1)
            assert "result" in opened.json()
            session = opened.headers["mcp-session-id"]
            got = await request(where(cluster, 1), "POST", headers=headers(session),
                                body=call(3, "add", a=1, b=1))  # fmt: skip
            assert got.status == 200, got
        assert re.search(r"session not saved session=\w+ correlation=[0-9a-f]{16}", cluster.logs())
    finally:
        cluster.stop()


# -- in process: task-store errors and event expiry ---------------------------------------------


def _task_server(store: RedisStore) -> Server:
    app = Server("tasks", "1.0.0", store=store)

    @app.tool(task="optional")
    async def build(target: str) -> str:
        """A job run as a task."""
        return f"built {target}"

    return app


async def test_task_store_errors_give_a_correlation_id_not_the_stores_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With the store unreachable, creating a task answers -32603 "Task store unavailable"
    and a correlation id, nothing of Redis's address or exception; the log line carries the
    same id and the details."""
    down = RedisServer()  # a free port, never started: connections are refused
    store = RedisStore.from_url(down.url, timeout=0.3)
    app = _task_server(store)
    caplog.set_level(logging.WARNING, "mcp_runtime.stores")
    with trio.fail_after(20):
        async with serving(app) as address:
            body = modern(1, "tools/call", {"name": "build", "arguments": {"target": "x"}})
            body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = TASKS
            got = await request(address, "POST", headers=modern_headers("tools/call", "build"),
                                body=body)  # fmt: skip
    error = got.json()["error"]
    assert (error["code"], error["message"]) == (-32603, "Task store unavailable"), error
    correlation = error["data"]["correlationId"]
    assert re.fullmatch(r"[0-9a-f]{16}", correlation)
    assert str(down.port) not in got.body.decode() and "127.0.0.1" not in got.body.decode()
    logged = [r.getMessage() for r in caplog.records if correlation in r.getMessage()]
    assert len(logged) == 1, caplog.text
    assert f"correlation={correlation}" in logged[0]
    assert f"redis at 127.0.0.1:{down.port}" in logged[0]  # (unavailable, or in its backoff)


async def test_a_sessions_stored_events_expire_with_the_session(redis_url: str) -> None:
    """A session idle for its timeout (1 s here) expires in Redis, and its stored SSE events
    with it (they took its TTL), instead of living ``event_ttl`` (30 min) longer."""
    store = RedisStore.from_url(redis_url)
    app = Server("events", "1.0.0", store=store)

    @app.tool
    async def count(to: int, ctx: Any) -> str:
        """Count with progress."""
        for n in range(1, to + 1):
            await ctx.report_progress(n, to)
        return f"counted to {to}"

    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    client = RedisClient("127.0.0.1", port)
    limits = HttpLimits(session_idle_timeout=1.0)
    with trio.fail_after(20):
        async with serving(app, http_limits=limits) as address:
            session = await open_raw_session(address)
            done = await request(address, "POST", body=call(2, "count", progress="p", to=3),
                                 headers=headers(session, accept="text/event-stream"))  # fmt: skip
            assert done.status == 200
            keys = [f"mcp:{kind}:{session}" for kind in ("s", "ev", "ec")]
            ttls = [await client.call("TTL", key) for key in keys]
            assert all(0 < t <= 1 for t in ttls), ttls
            while await client.call("EXISTS", *keys):  # noqa: ASYNC110 - Redis expires them
                await trio.sleep(0.1)
            assert await client.call("EXISTS", *keys) == 0
    await client.aclose()
