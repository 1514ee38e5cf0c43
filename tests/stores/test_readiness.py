"""Readiness of a real ``mcp-runtime serve`` process for a load balancer (docs/deploy.md,
"Health endpoints"): ``/readyz`` answers 503 "draining" from SIGTERM until the in-flight
requests are done (within the grace period), while liveness and the in-flight request go
on; the store-unreachable half is ``test_failover.test_unreachable_redis_is_a_clear_503_
and_recovery_needs_no_restart`` (Redis stopped and restarted under a running replica)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import trio

from ..transports.app import modern, modern_headers
from ..transports.http_client import request
from .cluster import HERE, ROOT
from .servers import free_port, wait_port


@pytest.fixture
def replica() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """One ``mcp-runtime serve`` process (no store: draining needs none)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"),
            "--transport", "http", "--port", str(port), "--log-level", "warning",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), "MCP_RUNTIME_STORE": ""},
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_port(port, 30)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_readiness_says_draining_during_the_grace_period(
    replica: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = replica
    where = ("127.0.0.1", port)
    with trio.fail_after(30):
        ready = await request(where, "GET", "/readyz")
        assert (ready.status, ready.json()) == (200, {"ready": True})
        outcome: dict[str, object] = {}

        async def slow_call() -> None:
            body = modern(1, "tools/call", {"name": "build", "arguments": {"target": "s"}})
            body["params"]["arguments"]["seconds"] = 3.0
            got = await request(
                where, "POST", headers=modern_headers("tools/call", "build"), body=body
            )
            outcome["status"] = got.status
            outcome["text"] = got.json()["result"]["content"][0]["text"]
            outcome["at"] = trio.current_time()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            await trio.sleep(0.7)  # the call is in flight
            proc.send_signal(signal.SIGTERM)
            signalled = trio.current_time()
            draining = await request(where, "GET", "/readyz")
            while draining.status == 200:  # the signal is handled asynchronously
                await trio.sleep(0.05)
                draining = await request(where, "GET", "/readyz")
            assert draining.status == 503
            assert draining.json() == {"ready": False, "reason": "draining"}
            assert draining.headers["connection"] == "close"
            assert "status" not in outcome  # still draining: the call is in flight
            live = await request(where, "GET", "/healthz")
            assert (live.status, live.json()) == (200, {"live": True})
            # New MCP traffic that still reaches it is refused clearly, not hung.
            refused = await request(
                where, "POST", headers=modern_headers("tools/call", "add"),
                body=modern(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
            )  # fmt: skip
            assert refused.status == 503 and refused.headers["retry-after"] == "1"
            assert trio.current_time() - signalled < 2.5
        assert outcome["status"] == 200 and outcome["text"] == "built s on ?"
    with trio.fail_after(15):
        while proc.poll() is None:  # noqa: ASYNC110 - polling another process
            await trio.sleep(0.05)
    assert proc.returncode == 0
