"""``mcp-runtime serve --workers 2`` on every listening transport (issue 19): WebSocket, TCP,
a Unix socket and the legacy 2024-11-05 HTTP+SSE transport (the latter with a real
redis-server, since its POSTs land on any worker). Real processes throughout: both workers
answer (each reports its pid), a worker killed with SIGKILL is replaced, and SIGTERM to the
supervisor lets a request in flight finish before every process exits 0. Where more than one
worker makes no sense (stdio, pipe) or would lose sessions (HTTP+SSE without a store) it is
refused in one line, exit 2."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from trio_websocket import HandshakeError, open_websocket_url

from ..transports.app import call, init_body
from ..transports.http_client import connect, request
from .cluster import HERE, ROOT
from .servers import RedisServer, free_port

TRANSPORTS = ("tcp", "unix", "ws", "sse")


class Peer:
    """One client connection speaking JSON-RPC to the server, whatever the transport."""

    async def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def receive(self) -> dict[str, Any]:
        raise NotImplementedError

    async def answer(self, request_id: int) -> dict[str, Any]:
        """The response to ``request_id`` (notifications before it are skipped)."""
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message


class StreamPeer(Peer):
    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        await self.stream.send_all(msgspec.json.encode(message) + b"\n")

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        decoded: dict[str, Any] = msgspec.json.decode(line)
        return decoded


class WebSocketPeer(Peer):
    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_message(msgspec.json.encode(message).decode())

    async def receive(self) -> dict[str, Any]:
        decoded: dict[str, Any] = msgspec.json.decode(await self.ws.get_message())
        return decoded


class LegacySsePeer(Peer):
    """GET /sse holds the stream; every message is its own POST (on a fresh connection, so
    the kernel may hand it to either worker)."""

    def __init__(self, address: tuple[str, int], stream: Any, endpoint: str) -> None:
        self.address = address
        self.stream = stream
        self.endpoint = endpoint
        self.statuses: list[int] = []

    async def send(self, message: dict[str, Any]) -> None:
        got = await request(self.address, "POST", self.endpoint, body=message)
        self.statuses.append(got.status)
        assert got.status == 202, (got.status, got.body)

    async def receive(self) -> dict[str, Any]:
        while True:
            event = await self.stream.next_event()
            if event is None:
                raise EOFError("the server ended the SSE stream")
            if event.event in (None, "message") and event.data:
                decoded: dict[str, Any] = msgspec.json.decode(event.data)
                return decoded


@contextlib.asynccontextmanager
async def open_peer(transport: str, where: Any) -> AsyncIterator[Peer]:
    if transport == "tcp":
        stream = await trio.open_tcp_stream("127.0.0.1", where)
        async with stream:
            yield StreamPeer(stream)
    elif transport == "unix":
        unix = await trio.open_unix_socket(where)
        async with unix:
            yield StreamPeer(unix)
    elif transport == "ws":
        async with contextlib.AsyncExitStack() as stack:
            opening = open_websocket_url(f"ws://127.0.0.1:{where}/mcp", subprotocols=["mcp"])
            try:
                ws = await stack.enter_async_context(opening)
            except HandshakeError as exc:  # (trio-websocket's word for "refused")
                raise ConnectionRefusedError(str(exc.__cause__)) from exc
            yield WebSocketPeer(ws)
    else:
        address = ("127.0.0.1", where)
        conn = await connect(address)
        try:
            await conn.send("GET", "/sse", headers={"accept": "text/event-stream"})
            head = await conn.head()
            assert head.status == 200, head
            first = await conn.next_event()
            assert first is not None and first.event == "endpoint", first
            yield LegacySsePeer(address, conn, first.data)
        finally:
            await conn.aclose()


def version(transport: str) -> str:
    return "2024-11-05" if transport == "sse" else "2025-11-25"


async def initialized(transport: str, peer: Peer) -> None:
    await peer.send(init_body(version(transport)))
    reply = await peer.answer(1)
    assert reply["result"]["protocolVersion"] == version(transport), reply
    await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def ask_pid(transport: str, where: Any) -> int:
    async with open_peer(transport, where) as peer:
        await initialized(transport, peer)
        await peer.send(call(2, "pid"))
        reply = await peer.answer(2)
        return int(reply["result"]["content"][0]["text"])


def pids(transport: str, where: Any, rounds: int) -> set[int]:
    async def ask() -> set[int]:
        seen: set[int] = set()
        with trio.fail_after(60):
            for _ in range(rounds):
                seen.add(await ask_pid(transport, where))
        return seen

    return trio.run(ask)


def wait_listening(transport: str, where: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if transport == "unix" and not Path(where).exists():
            time.sleep(0.05)
            continue
        try:
            pids(transport, where, 1)
            return
        except (OSError, EOFError, trio.BrokenResourceError, AssertionError):
            time.sleep(0.1)
    raise TimeoutError(f"{transport} {where} does not answer")


def serve_workers(transport: str, where: Any, *extra: str) -> subprocess.Popen[bytes]:
    place = ["--socket", where] if transport == "unix" else ["--port", str(where)]
    return subprocess.Popen(
        [
            sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"),
            "--transport", transport, *place, "--workers", "2", "--log-level", "warning",
            *extra,
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), "MCP_RUNTIME_STORE": ""},
        stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_workers_on_every_listening_transport(transport: str, request: Any) -> None:
    extra: list[str] = []
    if transport == "sse":  # its POSTs land on either worker: sessions go through Redis
        redis: RedisServer = request.getfixturevalue("redis_server")
        redis.flush()
        extra = ["--store", redis.url]
    where: Any
    if transport == "unix":
        where = str(Path(tempfile.mkdtemp(prefix="mcp-workers-")) / "mcp.sock")
    else:
        where = free_port()
    proc = serve_workers(transport, where, *extra)
    try:
        wait_listening(transport, where)
        # Both workers accept on the one socket (the second may still be starting when the
        # first answers: ask until both have, within a bound).
        first: set[int] = set()
        end = time.monotonic() + 30
        while len(first) < 2 and time.monotonic() < end:
            first |= pids(transport, where, 8)
        assert len(first) == 2, first
        assert proc.pid not in first  # the supervisor serves nobody itself

        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            now = pids(transport, where, 8)
            if len(now) == 2 and victim not in now:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the killed worker was not replaced")

        # SIGTERM while a request runs: it is answered, then every process exits cleanly.
        async def drain() -> str:
            with trio.fail_after(30):
                async with open_peer(transport, where) as peer:
                    await initialized(transport, peer)
                    await peer.send(call(3, "build", target="x", seconds=1.5))
                    await trio.sleep(0.4)  # in flight now
                    proc.send_signal(signal.SIGTERM)
                    reply = await peer.answer(3)
                    return str(reply["result"]["content"][0]["text"])

        assert trio.run(drain) == "built x on ?"
        assert proc.wait(30) == 0
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        assert "exited code=-9" in stderr, stderr
        assert "Traceback" not in stderr, stderr
        if transport == "unix":
            assert not Path(where).exists()  # the supervisor removed its socket
        else:
            with pytest.raises(OSError):
                trio.run(ask_pid, transport, where)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def refused(*args: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"), *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), "MCP_RUNTIME_STORE": "", **(env or {})},
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    return done.stderr.decode().strip().splitlines()


def test_workers_refused_where_they_make_no_sense(tmp_path: Path) -> None:
    assert refused("--transport", "stdio", "--workers", "2") == [
        "mcp-runtime: error: --workers does not apply to --transport stdio "
        "(only http, sse, ws, tcp, unix)"
    ]
    assert refused("--transport", "pipe", "--pipe-dir", str(tmp_path), "--workers", "2") == [
        "mcp-runtime: error: --workers does not apply to --transport pipe "
        "(only http, sse, ws, tcp, unix)"
    ]
    # From the environment too (which is not refused as a flag would be).
    assert refused("--transport", "stdio", env={"MCP_RUNTIME_WORKERS": "2"}) == [
        "mcp-runtime: error: --workers 2 needs a listening transport (http, sse, ws, tcp, "
        "unix): --transport stdio has one client, on this one process"
    ]


def test_legacy_sse_workers_without_a_store_are_refused() -> None:
    assert refused("--transport", "sse", "--port", str(free_port()), "--workers", "2") == [
        "mcp-runtime: error: --workers 2 needs --store redis://host:port/db: 2024-11-05 "
        "HTTP+SSE sessions live in one process's memory, so another worker would answer 404 "
        "to them"
    ]


@pytest.mark.parametrize("transport", ["ws", "tcp"])
@pytest.mark.parametrize("shared", [True, False], ids=["store", "no-store"])
def test_list_changes_reach_the_other_workers_with_a_store(
    transport: str, shared: bool, redis_server: RedisServer
) -> None:
    """Two connections held on different workers: a tool registered on one announces
    tools/list_changed on both with ``--store`` (the store's bus), on its own only without
    (each worker then keeps its own registry, as documented)."""
    redis_server.flush()
    port = free_port()
    proc = serve_workers(transport, port, *(["--store", redis_server.url] if shared else []))

    async def scenario() -> bool:
        with trio.fail_after(60):
            async with contextlib.AsyncExitStack() as stack:
                held: dict[int, Peer] = {}
                while len(held) < 2:
                    peer = await stack.enter_async_context(open_peer(transport, port))
                    await initialized(transport, peer)
                    await peer.send(call(2, "pid"))
                    pid = int((await peer.answer(2))["result"]["content"][0]["text"])
                    held.setdefault(pid, peer)
                a, b = held.values()
                params = {"name": "grow", "arguments": {"name": "extra_w"}}
                await a.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
                assert (await a.answer(3))["result"]["content"][0]["text"].startswith("added")
                with trio.move_on_after(3):
                    while True:
                        message = await b.receive()
                        if message.get("method") == "notifications/tools/list_changed":
                            return True
                return False

    try:
        wait_listening(transport, port)
        assert trio.run(scenario) is shared
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_workers_never_replace_a_file_that_is_not_a_socket(tmp_path: Path) -> None:
    """The supervisor binds the Unix socket: a stale socket file is replaced (the main test
    binds a fresh path), a regular file is refused in one line and kept."""
    path = tmp_path / "mcp.sock"
    path.write_text("keep me")
    done = subprocess.run(
        [
            sys.executable, "-m", "runtime", "serve", str(HERE / "replica_app.py"),
            "--transport", "unix", "--socket", str(path), "--workers", "2",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert done.stderr.decode().strip().splitlines() == [
        f"mcp-runtime: error: cannot listen on --socket {path}: {path} exists and is not a socket"
    ]
    assert path.read_text() == "keep me"
    # A stale socket (its server gone) is replaced.
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path.with_name("stale.sock")))
    stale.close()
    proc = serve_workers("unix", str(path.with_name("stale.sock")))
    try:
        wait_listening("unix", str(path.with_name("stale.sock")))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    assert not path.with_name("stale.sock").exists()
