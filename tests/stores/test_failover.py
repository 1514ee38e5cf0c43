"""Replicas on one Redis, driven with raw HTTP so that each request goes to the replica
the test names: a GET stream survives its replica's kill -9, a listen stream hears a change
caused elsewhere, an unreachable Redis gives a clear 503 (never a hang) and recovery needs no
restart, and ``--workers`` supervises its workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import trio

from runtime.stores import RedisClient

from ..transports.app import call, init_body, modern, modern_headers
from ..transports.http_client import connect, open_raw_session, request, sse_messages
from ..transports.http_client import session_headers as headers
from .cluster import HERE, ROOT, Cluster
from .servers import RedisServer, free_port, wait_port

VERSION = "2025-11-25"


@pytest.fixture
def replicas(redis_server: RedisServer) -> Iterator[Cluster]:
    redis_server.flush()
    made = Cluster(redis_server.url)
    try:
        for i in range(3):
            made.start_replica(i)
        yield made
    finally:
        made.stop()


def addr(cluster: Cluster, i: int) -> tuple[str, int]:
    return ("127.0.0.1", cluster.ports[i])


async def open_session(cluster: Cluster, home: int, initialized_on: int) -> str:
    return await open_raw_session(addr(cluster, home), initialized_at=addr(cluster, initialized_on))


async def call_on(
    cluster: Cluster, i: int, session: str, request_id: int, name: str, **args: Any
) -> Any:
    response = await request(
        addr(cluster, i), "POST", headers=headers(session), body=call(request_id, name, **args)
    )
    assert response.status == 200, (response, cluster.logs())
    found = response.json() if response.body[:1] == b"{" else sse_messages(response.body)[-1]
    return found["result"]["content"][0]["text"]


async def stored_event_ids(redis_url: str, session: str, stream: str) -> list[str]:
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    client = RedisClient("127.0.0.1", port)
    entries = await client.call("LRANGE", "mcp:ev:" + session, 0, -1)
    await client.aclose()
    ids = [bytes(e).partition(b" ")[0].decode() for e in entries]
    return [i for i in ids if i.rpartition("_")[0] == stream]


async def test_get_stream_survives_killing_its_replica(replicas: Cluster) -> None:
    """The GET stream on r1 hears changes caused on r2 (delivered by r0, which saw
    ``initialized``); r1 is killed (-9); more changes happen; the client resumes on r2 with
    Last-Event-ID and gets exactly the events it missed: none lost, none twice."""
    received: list[str] = []
    with trio.fail_after(60):
        session = await open_session(replicas, home=0, initialized_on=0)
        get = await connect(addr(replicas, 1))
        await get.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
        assert (await get.head()).status == 200
        priming = await get.next_event()
        assert priming is not None and priming.data == ""

        async def read(conn: Any, count: int) -> None:
            while len([r for r in received if r]) < count:
                event = await conn.next_event()
                assert event is not None
                if event.data:
                    message = msgspec.json.decode(event.data)
                    assert message["method"] == "notifications/prompts/list_changed"
                    received.append(event.id)

        await call_on(replicas, 2, session, 10, "tick", times=1)
        await read(get, 1)
        await call_on(replicas, 2, session, 11, "tick", times=1)
        await read(get, 2)
        replicas.kill_replica(1)
        await get.aclose()
        # Changes while no GET stream is attached anywhere: stored, not lost.
        for n in range(3):
            await call_on(replicas, 2, session, 20 + n, "tick", times=1)
        stored = await stored_event_ids(replicas.redis_url, session, "g0")
        while len(stored) < 5:  # delivery is asynchronous (r0's feed task)
            await trio.sleep(0.05)
            stored = await stored_event_ids(replicas.redis_url, session, "g0")
        resumed = await connect(addr(replicas, 2))
        await resumed.send(
            "GET",
            "/mcp",
            headers=headers(session, accept="text/event-stream", **{"last-event-id": received[-1]}),
        )
        assert (await resumed.head()).status == 200
        await read(resumed, 5)
        # And live events after the replay, on the new replica.
        await call_on(replicas, 0, session, 30, "tick", times=1)
        await read(resumed, 6)
        await resumed.aclose()
    stored = await stored_event_ids(replicas.redis_url, session, "g0")
    assert received == stored, (received, stored)
    assert len(set(received)) == len(received) == 6


async def test_listen_stream_hears_a_change_caused_on_another_replica(replicas: Cluster) -> None:
    """2026-07-28 ``subscriptions/listen`` on r0; ``tick`` runs on r1; the list change
    reaches the listen stream through the store's bus."""
    with trio.fail_after(30):
        listen = await connect(addr(replicas, 0))
        body = modern(1, "subscriptions/listen", {"notifications": {"promptsListChanged": True}})
        await listen.send("POST", "/mcp", headers=modern_headers("subscriptions/listen"), body=body)
        assert (await listen.head()).status == 200
        methods: list[str] = []
        while "notifications/subscriptions/acknowledged" not in methods:
            event = await listen.next_event()
            assert event is not None
            if event.data:
                methods.append(msgspec.json.decode(event.data)["method"])
        tick = modern(2, "tools/call", {"name": "tick", "arguments": {"times": 1}})
        response = await request(
            addr(replicas, 1), "POST", headers=modern_headers("tools/call", "tick"), body=tick
        )
        assert response.status == 200, response
        assert "on r1" in response.body.decode()
        while "notifications/prompts/list_changed" not in methods:
            event = await listen.next_event()
            assert event is not None
            if event.data:
                methods.append(msgspec.json.decode(event.data)["method"])
        await listen.aclose()


async def test_unreachable_redis_is_a_clear_503_and_recovery_needs_no_restart() -> None:
    redis = RedisServer().start()
    cluster = Cluster(redis.url, replicas=1)
    try:
        cluster.start_replica(0)
        where = addr(cluster, 0)
        with trio.fail_after(60):
            ready = await request(where, "GET", "/readyz")
            assert (ready.status, ready.json()) == (200, {"ready": True})
            session = await open_session(cluster, 0, 0)
            redis.stop()
            # The local copy still serves a request that needs no store round trip...
            assert await call_on(cluster, 0, session, 2, "add", a=1, b=2) == "3"
            # ...a new session cannot be shared: 503 with a JSON-RPC error, fast.
            start = trio.current_time()
            refused = await request(where, "POST", body=init_body(VERSION))
            assert trio.current_time() - start < 3.0
            assert refused.status == 503, refused
            assert refused.headers["retry-after"] == "1"
            error = refused.json()["error"]
            assert error["code"] == -32603
            assert "Session store unavailable" in error["message"]
            # An unknown session cannot be looked up either: 503, not 404.
            other = await request(where, "POST", headers=headers("f" * 32), body=call(3, "add"))
            assert other.status == 503
            # Still ready (it serves 2026-07-28 requests and the sessions it holds), and
            # says it is degraded.
            degraded = {"ready": True, "degraded": "store unreachable"}
            while (ready := await request(where, "GET", "/readyz")).json() != degraded:
                assert ready.status == 200, ready
                await trio.sleep(0.1)
            live = await request(where, "GET", "/healthz")
            assert live.status == 200
            redis.start()
            while (ready := await request(where, "GET", "/readyz")).json() != {"ready": True}:
                assert ready.status == 200, ready
                await trio.sleep(0.1)
            again = await open_session(cluster, 0, 0)
            assert await call_on(cluster, 0, again, 2, "add", a=2, b=2) == "4"
    finally:
        cluster.stop()
        redis.stop()


def test_workers_share_the_socket_and_are_restarted(redis_server: RedisServer) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"),
            "--transport", "http", "--port", str(port), "--workers", "2",
            "--store", redis_server.url, "--log-level", "warning",
        ],
        env=env,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_port(port, 30)

        def pids(rounds: int = 40) -> set[int]:
            async def ask() -> set[int]:
                seen: set[int] = set()
                for i in range(rounds):
                    body = modern(i, "tools/call", {"name": "pid", "arguments": {}})
                    got = await request(
                        ("127.0.0.1", port),
                        "POST",
                        headers=modern_headers("tools/call", "pid"),
                        body=body,
                    )
                    assert got.status == 200, got
                    seen.add(int(got.json()["result"]["content"][0]["text"]))
                return seen

            return trio.run(ask)

        # Both workers accept on the one socket (the second may still be starting when the
        # first answers: ask until both have, within a bound).
        first: set[int] = set()
        end = time.monotonic() + 20
        while len(first) < 2 and time.monotonic() < end:
            first |= pids(10)
        assert len(first) == 2, first
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            now = pids(10)
            if len(now) == 2 and victim not in now:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the killed worker was not replaced")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        assert "exited code=-9" in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_more_workers_without_a_store_are_refused() -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"),
            "--transport", "http", "--workers", "2",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), "MCP_RUNTIME_STORE": ""},
        capture_output=True,
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert lines == [
        "mcp-runtime: error: --workers 2 needs --store redis://host:port/db: handshake-era "
        "sessions live in one process's memory, so another worker would answer 404 to them"
    ]
