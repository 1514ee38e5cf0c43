"""Parallel forwarding over remote links without per-request streams (runtime/bridge/_pool.py):
2026-07-28 calls that elicit, forwarded to a handshake-era remote over TCP, Unix, WebSocket or
legacy SSE, each on an upstream session of its own (up to ``max_parallel``), so each is asked
its own question and given its own log messages while they run at the same time; past the cap
a call waits for a turn; over stdio they stay one at a time unless ``max_parallel`` is set."""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.bridge import DEFAULT_MAX_PARALLEL, Forward, proxy_server
from runtime.client import Backoff, Notification, PeerError, open_client

from ..peers import cli
from .test_bridge_sdk import background, free_port, proxy_cli, refused
from .timed_upstream import make_app

TIMED = Path(__file__).parent / "timed_upstream.py"


async def answer(params: dict[str, Any]) -> dict[str, Any]:
    # The name given is the question's own tag: a question put to the wrong call shows.
    tag = str(params["message"]).removeprefix("name for ").removesuffix("?")
    return {"action": "accept", "content": {"name": f"name-of-{tag}"}}


def logs(seen: list[Notification]) -> list[str]:
    return [str(n.params.get("data")) for n in seen if n.method == "notifications/message"]


def most_at_once(runs: list[dict[str, Any]]) -> int:
    """The most calls running on the remote at one instant (from their start/end times)."""
    edges = sorted(
        [(r["start"], 1) for r in runs] + [(r["end"], -1) for r in runs],
        key=lambda e: (e[0], e[1]),  # an end before a start at the same instant
    )
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def forward_of(proxy: Any) -> Forward:
    (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]
    return forward


async def calls(url: str, tags: list[str]) -> list[dict[str, Any]]:
    """``tags`` called at once by one 2026-07-28 client: each answered with its own name and
    given only its own log messages; their runs on the remote, as it reported them."""
    runs: dict[str, dict[str, Any]] = {}
    async with open_client(url, era="modern", elicitation=answer) as client:
        await client.set_logging_level("info")
        seen: dict[str, list[Notification]] = {tag: [] for tag in tags}

        async def call(tag: str) -> None:
            result = await client.call_tool(
                "introduce", {"tag": tag}, on_notification=seen[tag].append
            )
            runs[tag] = json.loads(result.text)

        async with trio.open_nursery() as nursery:
            for tag in tags:
                nursery.start_soon(call, tag)
    for tag in tags:
        assert runs[tag]["name"] == f"name-of-{tag}"
        assert logs(seen[tag]) == [f"before {tag}", f"after {tag}"]
    return list(runs.values())


async def serve_remote(nursery: trio.Nursery, link: str, where: Path) -> str:
    remote = make_app()
    if link == "tcp":
        port = (await nursery.start(remote.serve_tcp))[1]
        return f"tcp://127.0.0.1:{port}"
    if link == "unix":
        path = where / "remote.sock"
        await nursery.start(remote.serve_unix, str(path))
        return f"unix:{path}"
    if link == "websocket":
        port = (await nursery.start(remote.serve_websocket))[1]
        return f"ws://127.0.0.1:{port}/mcp"
    port = (await nursery.start(remote.serve_sse))[1]
    return f"http://127.0.0.1:{port}/sse"


@pytest.mark.parametrize("link", ["tcp", "unix", "websocket", "legacy-sse"])
async def test_concurrent_calls_run_at_once_each_with_its_own_question(link: str) -> None:
    with trio.fail_after(30), tempfile.TemporaryDirectory() as tmp:
        async with trio.open_nursery() as nursery:
            target = await serve_remote(nursery, link, Path(tmp))
            proxy = proxy_server(target, era="handshake")
            forward = forward_of(proxy)
            assert forward.pool.size == DEFAULT_MAX_PARALLEL
            port = (await nursery.start(proxy.serve_http))[1]
            runs = await calls(f"http://127.0.0.1:{port}/mcp", ["a", "b", "c"])
            assert most_at_once(runs) == 3  # all three overlapped on the remote
            # The shared session carried one, two extra sessions the others, kept for reuse.
            assert len(forward.pool.open) == 2
            assert len(forward.pool.idle) == 2
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("link", ["tcp", "websocket"])
async def test_the_cap_is_honoured_and_idle_sessions_close(link: str) -> None:
    """``max_parallel=2``: of three calls, two run at once and the third waits for a turn;
    the extra session is reused, then closed once idle past ``parallel_idle_timeout``."""
    with trio.fail_after(30), tempfile.TemporaryDirectory() as tmp:
        async with trio.open_nursery() as nursery:
            target = await serve_remote(nursery, link, Path(tmp))
            proxy = proxy_server(target, era="handshake", max_parallel=2, parallel_idle_timeout=1.0)
            forward = forward_of(proxy)
            port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{port}/mcp"
            runs = await calls(url, ["a", "b", "c"])
            assert most_at_once(runs) == 2
            (extra,) = forward.pool.open
            runs = await calls(url, ["d", "e"])
            assert most_at_once(runs) == 2
            assert forward.pool.open == {extra}  # reused, not a new one
            for _ in range(200):  # closed once idle past the timeout (1 s)
                if not forward.pool.open:
                    break
                await trio.sleep(0.05)
            assert not forward.pool.open
            assert extra.client is None
            # And opened again on demand.
            runs = await calls(url, ["f", "g"])
            assert most_at_once(runs) == 2
            nursery.cancel_scope.cancel()


async def test_stdio_stays_one_at_a_time() -> None:
    """A remote over stdio (our own server in its own process): one upstream session, calls
    forwarded one at a time, each still asked its own question."""
    target = cli("serve", str(TIMED))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            proxy = proxy_server(target, era="handshake")
            assert forward_of(proxy).pool.size == 1
            port = (await nursery.start(proxy.serve_http))[1]
            runs = await calls(f"http://127.0.0.1:{port}/mcp", ["a", "b"])
            assert most_at_once(runs) == 1
            nursery.cancel_scope.cancel()


async def test_stdio_with_max_parallel_set_runs_processes_side_by_side() -> None:
    """``max_parallel=2`` over stdio: the second call gets a process of its own (started on
    demand, which takes longer than a call: the overlap is asserted once both are up)."""
    target = cli("serve", str(TIMED))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            proxy = proxy_server(target, era="handshake", max_parallel=2)
            forward = forward_of(proxy)
            port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{port}/mcp"
            await calls(url, ["a", "b"])
            assert len(forward.pool.open) == 1  # the second process, kept for reuse
            runs = await calls(url, ["c", "d"])
            assert most_at_once(runs) == 2
            nursery.cancel_scope.cancel()


def test_the_default_depends_on_the_link() -> None:
    cases: list[tuple[Any, int]] = [
        ("tcp://127.0.0.1:9", DEFAULT_MAX_PARALLEL),
        ("unix:/tmp/mcp.sock", DEFAULT_MAX_PARALLEL),
        ("ws://127.0.0.1:9/mcp", DEFAULT_MAX_PARALLEL),
        ("http://127.0.0.1:9/sse", DEFAULT_MAX_PARALLEL),
        ([sys.executable, "server.py"], 1),
        ("pipe:/tmp/in:/tmp/out", 1),
    ]
    for target, size in cases:
        assert forward_of(proxy_server(target)).pool.size == size
    assert forward_of(proxy_server(["x"], max_parallel=3)).pool.size == 3
    with pytest.raises(ValueError, match="max_parallel"):
        proxy_server("tcp://127.0.0.1:9", max_parallel=0)
    with pytest.raises(ValueError, match="parallel_idle_timeout"):
        proxy_server("tcp://127.0.0.1:9", parallel_idle_timeout=0)


@pytest.mark.parametrize(("flags", "at_once"), [((), 2), (("--upstream-max-parallel", "1"), 1)])
async def test_the_cli_flag(flags: tuple[str, ...], at_once: int) -> None:
    """``mcp-runtime serve tcp://... --transport http`` (its own process): two calls run at
    once by default; ``--upstream-max-parallel 1`` forwards them one at a time."""
    port = free_port()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            remote_port = (await nursery.start(make_app().serve_tcp))[1]
            proxy = proxy_cli(
                f"tcp://127.0.0.1:{remote_port}",
                str(port),
                "--upstream-era",
                "handshake",
                "--upstream-parallel-idle",
                "5",
                *flags,
            )
            async with background(proxy, port):
                runs = await calls(f"http://127.0.0.1:{port}/mcp", ["a", "b"])
                assert most_at_once(runs) == at_once
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("flag", "value"), [("--upstream-max-parallel", "0"), ("--upstream-parallel-idle", "-1")]
)
def test_the_cli_flags_are_validated(flag: str, value: str) -> None:
    assert flag in refused("serve", "tcp://127.0.0.1:9", flag, value)


async def test_extra_sessions_reconnect_to_a_restarted_remote() -> None:
    """The remote restarts (same port): the shared and the extra session reconnect, and
    two calls run at once again, each asked its own question."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            remote = trio.CancelScope()

            async def serve(port: int, *, task_status: trio.TaskStatus[Any]) -> None:
                with remote:
                    await make_app().serve_tcp(port, task_status=task_status)

            port = (await nursery.start(serve, 0))[1]
            proxy = proxy_server(
                f"tcp://127.0.0.1:{port}",
                era="handshake",
                max_parallel=2,
                # Attempts bounded by time only (see test_bridge_eras: 8 jittered ones can
                # all fall inside the 0.3 s the remote is away).
                backoff=Backoff(initial=0.05, cap=0.2, max_attempts=1000, max_elapsed=10),
            )
            forward = forward_of(proxy)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            assert most_at_once(await calls(url, ["a", "b"])) == 2
            assert len(forward.pool.open) == 1
            remote.cancel()
            await trio.sleep(0.3)
            remote = trio.CancelScope()
            await nursery.start(serve, port)
            assert most_at_once(await calls(url, ["c", "d"])) == 2
            nursery.cancel_scope.cancel()


async def test_an_extra_session_that_cannot_open_fails_only_its_request() -> None:
    """A stdio remote whose second process exits at once: the call that needed an extra
    session gets -32603 naming the cause, the other its answer, and the proxy serves on."""
    with tempfile.TemporaryDirectory() as tmp:
        once = Path(tmp) / "started"
        script = (
            f'mkdir "{once}" 2>/dev/null || exit 1; exec {shlex.join(cli("serve", str(TIMED)))}'
        )
        proxy = proxy_server(
            ["sh", "-c", script],
            era="handshake",
            max_parallel=2,
            backoff=Backoff(max_attempts=0),
        )
        forward = forward_of(proxy)
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                port = (await nursery.start(proxy.serve_http))[1]
                url = f"http://127.0.0.1:{port}/mcp"
                outcomes: dict[str, Any] = {}
                async with open_client(url, era="modern", elicitation=answer) as client:

                    async def call(tag: str) -> None:
                        try:
                            result = await client.call_tool("introduce", {"tag": tag})
                            outcomes[tag] = json.loads(result.text)["name"]
                        except PeerError as exc:
                            outcomes[tag] = exc

                    async with trio.open_nursery() as both:
                        both.start_soon(call, "a")
                        await trio.sleep(0.05)  # "a" takes the shared session
                        both.start_soon(call, "b")
                    assert outcomes["a"] == "name-of-a"
                    failed = outcomes["b"]
                    assert isinstance(failed, PeerError)
                    assert failed.code == -32603
                    assert "cannot reach the remote MCP server" in failed.message
                    assert not forward.pool.open
                    outcomes.clear()
                    await call("c")  # the turn was given back: the shared session serves it
                    assert outcomes == {"c": "name-of-c"}
                nursery.cancel_scope.cancel()


async def test_a_cancelled_call_gives_its_turn_and_session_back() -> None:
    """A call on an extra session cancelled by its client: the cap's turn and the session
    come back, so the next two calls run at once again on the same sessions."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(make_app().serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="handshake", max_parallel=2)
            forward = forward_of(proxy)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            url = f"http://127.0.0.1:{proxy_port}/mcp"
            async with open_client(url, era="modern", elicitation=answer) as client:
                done: list[str] = []

                async def call(tag: str, scope: trio.CancelScope) -> None:
                    with scope:
                        result = await client.call_tool("introduce", {"tag": tag})
                        done.append(json.loads(result.text)["name"])

                cancelled = trio.CancelScope()
                async with trio.open_nursery() as both:
                    both.start_soon(call, "a", trio.CancelScope())
                    await trio.sleep(0.05)  # "a" on the shared session, "b" on an extra one
                    both.start_soon(call, "b", cancelled)
                    await trio.sleep(0.1)  # the remote is running "b" (before it asks)
                    assert len(forward.pool.open) == 1
                    assert not forward.pool.idle
                    cancelled.cancel()
                assert done == ["name-of-a"]
            for _ in range(100):  # the cancellation reaches the proxy over its own POST
                if forward.pool.turns.value == 2:
                    break
                await trio.sleep(0.05)
            (extra,) = forward.pool.open
            assert forward.pool.idle == [extra]
            assert forward.pool.turns.value == 2
            assert most_at_once(await calls(url, ["c", "d"])) == 2
            assert forward.pool.open == {extra}
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("link", ["tcp", "websocket"])
async def test_a_modern_remotes_log_messages_with_calls_at_once(link: str) -> None:
    """A 2026-07-28 remote over a link without per-request streams: its log messages name
    no request, so each concurrent request that carries a log level runs on an upstream
    session of its own and gets only its own messages, at its own level."""
    app = Server("modern-upstream", "1.0.0")

    @app.tool
    async def chatty(tag: str, ctx: Context) -> str:
        """Logs at two levels around a pause; answers when it ran."""
        start = time.time()
        await ctx.debug(f"debug {tag}")
        await ctx.info(f"one {tag}")
        await trio.sleep(0.4)  # the others start meanwhile, if let through
        await ctx.warning(f"two {tag}")
        return json.dumps({"start": start, "end": time.time()})

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            if link == "tcp":
                port = (await nursery.start(app.serve_tcp))[1]
                target = f"tcp://127.0.0.1:{port}"
            else:
                port = (await nursery.start(app.serve_websocket))[1]
                target = f"ws://127.0.0.1:{port}/mcp"
            proxy = proxy_server(target, era="modern")
            forward = forward_of(proxy)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            levels = {"a": "info", "b": "warning", "c": "debug"}
            seen: dict[str, list[Notification]] = {tag: [] for tag in levels}
            runs: list[dict[str, Any]] = []
            async with trio.open_nursery() as calls_:
                for tag, level in levels.items():

                    async def call(tag: str = tag, level: str = level) -> None:
                        url = f"http://127.0.0.1:{proxy_port}/mcp"
                        async with open_client(url, era="modern") as client:
                            await client.set_logging_level(level)
                            result = await client.call_tool(
                                "chatty", {"tag": tag}, on_notification=seen[tag].append
                            )
                            runs.append(json.loads(result.text))

                    calls_.start_soon(call)
            assert logs(seen["a"]) == ["one a", "two a"]
            assert logs(seen["b"]) == ["two b"]
            assert logs(seen["c"]) == ["debug c", "one c", "two c"]
            assert most_at_once(runs) == 3
            assert len(forward.pool.open) == 2
            nursery.cancel_scope.cancel()
