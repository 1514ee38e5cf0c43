"""The proxy's bounds on a stdio remote: a deadline on each request to the remote
(``call_timeout``, ``--upstream-call-timeout``) and a budget of upstream processes
(``max_upstream_processes``, ``--max-upstream-processes``).

The remote is ``silent_upstream.py``, a raw stdio server run by the proxy (one process per
upstream session): its ``hang`` tool is never answered, it records every message it receives
(so the test sees the proxy's ``notifications/cancelled``) and marks each of its processes
with a file (so the test counts the live ones in /proc).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.bridge import Forward, proxy_server
from runtime.client import Client, PeerError, open_client

from .test_bridge_sdk import background, free_port, proxy_cli, refused
from .test_bridge_state import forward_of

SILENT = Path(__file__).parent / "silent_upstream.py"


def upstream_alive(directory: Path) -> int:
    """The remote's processes that still run (zombies, which no longer do, not counted)."""
    alive = 0
    for mark in directory.glob("pid-*"):
        try:
            with open(f"/proc/{mark.name[4:]}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        alive += state != "Z"
    return alive


def received(directory: Path) -> list[dict[str, Any]]:
    path = directory / "received.ndjson"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


class Peak:
    """The most remote processes seen alive at once, sampled every 10 ms while it runs; and
    the proxy's forwarding middleware."""

    def __init__(self, directory: Path, forward: Forward) -> None:
        self.directory = directory
        self.forward = forward
        self.most = 0

    async def run(self) -> None:
        while True:
            self.most = max(self.most, upstream_alive(self.directory))
            await trio.sleep(0.01)


@asynccontextmanager
async def proxied(directory: Path, **options: Any) -> AsyncIterator[tuple[str, Peak]]:
    """The proxy of a silent stdio remote, served over HTTP in-process: its URL, and the
    peak count of remote processes (sampled for the whole body)."""
    proxy = proxy_server([sys.executable, str(SILENT), str(directory)], **options)
    peak = Peak(directory, forward_of(proxy))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peak.run)
        port = (await nursery.start(proxy.serve_http))[1]
        yield f"http://127.0.0.1:{port}/mcp", peak
        nursery.cancel_scope.cancel()


async def echo(client: Client, text: str) -> str:
    result = await client.request("tools/call", {"name": "echo", "arguments": {"text": text}})
    return str(result["content"][0]["text"])


async def cancelled_upstream(directory: Path) -> dict[str, Any]:
    """The ``hang`` call the remote received and the ``notifications/cancelled`` naming it."""
    with trio.fail_after(10):
        while True:
            messages = received(directory)
            calls = [
                m["id"]
                for m in messages
                if m.get("method") == "tools/call" and m["params"]["name"] == "hang"
            ]
            cancels = [
                m["params"]
                for m in messages
                if m.get("method") == "notifications/cancelled"
                and m["params"].get("requestId") in calls
            ]
            if cancels:
                return cancels[0]
            await trio.sleep(0.05)


@pytest.mark.parametrize("downstream_era", ["handshake", "modern"])
async def test_a_silent_remote_gets_the_deadline_and_the_proxy_serves_on(
    downstream_era: Any, tmp_path: Path
) -> None:
    """``call_timeout=1``: a call the remote never answers is answered -32001 naming the
    limit a little after one second (not never), the remote is told with
    ``notifications/cancelled``, and the same client's next calls are served. A handshake-era
    client's call goes through its own upstream session; a 2026-07-28 client's through the
    shared one, in its turn (the turn is given back)."""
    with trio.fail_after(60):
        async with (
            proxied(tmp_path, era="handshake", call_timeout=1.0) as (url, _),
            open_client(url, era=downstream_era) as client,
        ):
            assert await echo(client, "before") == "before"
            started = trio.current_time()
            with pytest.raises(PeerError) as raised:
                await client.request("tools/call", {"name": "hang", "arguments": {}})
            waited = trio.current_time() - started
            assert raised.value.code == -32001
            assert raised.value.message == (
                "Request timed out: the remote MCP server did not answer tools/call "
                "within 1 s (call_timeout)"
            )
            assert raised.value.data == {"timeoutSeconds": 1.0, "limit": "call_timeout"}
            assert 1.0 <= waited < 4.0, waited  # the deadline, plus a loaded machine's margin
            cancel = await cancelled_upstream(tmp_path)
            assert cancel["reason"] == "timeout"
            # The proxy, the session and the upstream session live on.
            assert await echo(client, "after") == "after"
            with pytest.raises(PeerError) as again:
                await client.request("tools/call", {"name": "hang", "arguments": {}})
            assert again.value.code == -32001
            assert await echo(client, "still") == "still"


async def test_sessions_past_the_process_budget_are_refused(tmp_path: Path) -> None:
    """``max_upstream_processes=3``: the shared session's process and two sessions' fill
    it. Five handshake-era clients at once: two are served, three refused with -32010 naming
    the limit, and never more than three remote processes run; once a session ends, its
    process is given back and a new session is served."""
    with trio.fail_after(90):
        async with proxied(tmp_path, era="handshake", max_upstream_processes=3) as (url, peak):
            outcomes: list[str] = []
            errors: list[PeerError] = []
            all_in, release = trio.Event(), trio.Event()

            async def one(index: int) -> None:
                try:
                    async with open_client(url, era="handshake") as client:
                        outcomes.append(await echo(client, f"client {index}"))
                        if len(outcomes) + len(errors) == 5:
                            all_in.set()
                        await release.wait()
                        assert await echo(client, f"again {index}") == f"again {index}"
                except PeerError as exc:
                    errors.append(exc)
                    if len(outcomes) + len(errors) == 5:
                        all_in.set()

            async with trio.open_nursery() as nursery:
                for index in range(5):
                    nursery.start_soon(one, index)
                await all_in.wait()
                assert upstream_alive(tmp_path) == 3
                release.set()
            assert len(outcomes) == 2, outcomes
            assert len(errors) == 3
            for error in errors:
                assert error.code == -32010
                assert error.message == (
                    "Server overloaded: the proxy runs 3 upstream processes "
                    "(max_upstream_processes)"
                )
                assert error.data == {"limit": "max_upstream_processes", "max": 3}
            assert peak.most == 3
            # The two sessions ended (DELETE): once their processes are gone, they are given
            # back, and two new sessions are served.
            budget = peak.forward.processes
            assert budget is not None
            while budget.used > 1:  # noqa: ASYNC110 - given back by the sessions' own tasks
                await trio.sleep(0.02)
            assert upstream_alive(tmp_path) == 1
            async with (
                open_client(url, era="handshake") as first,
                open_client(url, era="handshake") as second,
            ):
                assert await echo(first, "one") == "one"
                assert await echo(second, "two") == "two"
            assert peak.most == 3


async def test_parallel_forwarding_past_the_budget_waits_for_the_shared_session(
    tmp_path: Path,
) -> None:
    """``max_parallel=3`` over stdio opens an extra process per concurrent 2026-07-28 call
    (whatever the remote asks meanwhile is that call's); with ``max_upstream_processes=2``
    only one extra is opened: the third call waits for a turn, and all three are answered."""
    with trio.fail_after(60):
        async with (
            proxied(tmp_path, era="handshake", max_parallel=3, max_upstream_processes=2) as (
                url,
                peak,
            ),
            open_client(url, era="modern") as client,
        ):
            answers: list[str] = []

            async def slow(index: int) -> None:
                result = await client.request(
                    "tools/call", {"name": "slow", "arguments": {"text": f"slow {index}"}}
                )
                answers.append(result["content"][0]["text"])

            async with trio.open_nursery() as nursery:
                for index in range(3):
                    nursery.start_soon(slow, index)
            assert sorted(answers) == ["slow 0", "slow 1", "slow 2"]
            assert peak.most == 2


async def test_the_two_flags_from_the_command_line(tmp_path: Path) -> None:
    """``--upstream-call-timeout 0.5 --max-upstream-processes 2`` on ``serve stdio:...``: the
    silent call is answered -32001 naming the limit, a second session is refused -32010."""
    proxy_port = free_port()
    command = proxy_cli(
        f"stdio:{sys.executable} {SILENT} {tmp_path}",
        str(proxy_port),
        "--upstream-era",
        "handshake",
        "--upstream-call-timeout",
        "0.5",
        "--max-upstream-processes",
        "2",
    )
    with trio.fail_after(60):
        async with (
            background(command, proxy_port),
            open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="handshake") as client,
        ):
            with pytest.raises(PeerError) as raised:
                await client.request("tools/call", {"name": "hang", "arguments": {}})
            assert raised.value.code == -32001
            assert raised.value.data == {"timeoutSeconds": 0.5, "limit": "call_timeout"}
            with pytest.raises(PeerError) as refused_session:
                async with open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="handshake"):
                    pass
            assert refused_session.value.code == -32010
            assert refused_session.value.data["limit"] == "max_upstream_processes"
            assert await echo(client, "served") == "served"


def test_the_two_flags_must_be_positive() -> None:
    assert "--upstream-call-timeout" in refused(
        "serve", "stdio:python x.py", "--upstream-call-timeout", "0"
    )
    assert "--max-upstream-processes" in refused(
        "serve", "stdio:python x.py", "--max-upstream-processes", "0"
    )
