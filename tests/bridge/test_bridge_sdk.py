"""Issue 21 item 3: the official SDK's server behind our proxy, reached by the official SDK
client, with real processes and loopback sockets on both sides:

- SDK client --stdio--> ``mcp-runtime serve http://...`` --HTTP--> SDK server;
- SDK client --HTTP--> ``mcp-runtime serve stdio:... --transport http`` --stdio--> SDK server.

Each run is compared with the same SDK client talking to the SDK server directly: what the
client sees (results, isError results, JSON-RPC errors, progress) must be the same, and the
cancellation the client sends must reach the SDK server's tool.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from ..peers import ROOT, cli, run_sdk_client

UPSTREAM = ROOT / "tests" / "bridge" / "sdk_upstream.py"
CLIENT = "bridge/sdk_client.py"

#: What the client saw that must be the same through the proxy as directly.
SAME = (
    "tools",
    "echo",
    "fail",
    "resources",
    "greeting",
    "missing",
    "prompts",
    "review",
    "slow",
    "progress",
)


def proxy_cli(target: str, port: int | str, *flags: str) -> list[str]:
    """``mcp-runtime serve TARGET`` as a proxy on Streamable HTTP at 127.0.0.1:``port``."""
    return cli("serve", target, "--transport", "http", "--port", str(port), *flags)


def refused(*args: str) -> str:
    """``mcp-runtime ARGS`` refused as a usage error (exit 2): its stderr."""
    result = subprocess.run(
        cli(*args), cwd=ROOT, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 2, result
    return result.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_accepting(port: int) -> None:
    with trio.fail_after(20):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.05)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def background(command: list[str], port: int) -> AsyncIterator[trio.Process]:
    """``command`` in its own process group, once it accepts on ``port``; killed after."""
    process = await trio.lowlevel.open_process(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        await wait_accepting(port)
        yield process
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


def check_direct(seen: dict[str, Any]) -> None:
    """What the SDK server answers (so the comparison below compares something)."""
    assert seen["echo"]["content"] == [{"type": "text", "text": "héllo"}]
    assert seen["fail"]["isError"] is True
    assert seen["fail"]["content"][0]["text"] == "Error executing tool fail"
    assert seen["greeting"]["contents"][0]["text"] == "hello through the bridge"
    assert seen["missing"]["code"] is not None  # a JSON-RPC error
    assert [name["name"] for name in seen["tools"]["tools"]] == ["echo", "fail", "slow"]
    assert seen["progress"] == [[1.0, 3.0, "one"], [2.0, 3.0, "two"]]
    assert seen["slow"]["type"] == "MCPError"  # the client's own timeout


def check_proxied(direct: dict[str, Any], proxied: dict[str, Any], markers: Path) -> None:
    for key in SAME:
        assert proxied[key] == direct[key], key
    init = proxied["initialize"]
    assert init["serverInfo"]["name"] == "mcp-runtime-proxy"
    assert {"tools", "resources", "prompts"} <= set(init["capabilities"])
    assert (markers / "cancelled").read_text() == "yes"  # the cancellation crossed both hops


async def test_stdio_client_to_proxy_to_http_sdk_server(tmp_path: Path) -> None:
    direct_markers = tmp_path / "direct"
    proxied_markers = tmp_path / "proxied"
    direct_markers.mkdir()
    proxied_markers.mkdir()
    stdio = [sys.executable, str(UPSTREAM), "stdio", str(direct_markers)]
    direct = await run_sdk_client(CLIENT, "stdio", "--", *stdio)
    check_direct(direct)
    assert (direct_markers / "cancelled").exists()

    port = free_port()
    upstream = [sys.executable, str(UPSTREAM), "http", str(port), str(proxied_markers)]
    async with background(upstream, port):
        proxy = cli("serve", f"http://127.0.0.1:{port}/mcp", "--transport", "stdio")
        proxied = await run_sdk_client(CLIENT, "stdio", "--", *proxy)
    check_proxied(direct, proxied, proxied_markers)


async def test_http_client_to_proxy_to_stdio_sdk_server(tmp_path: Path) -> None:
    direct_markers = tmp_path / "direct"
    proxied_markers = tmp_path / "proxied"
    direct_markers.mkdir()
    proxied_markers.mkdir()
    port = free_port()
    upstream = [sys.executable, str(UPSTREAM), "http", str(port), str(direct_markers)]
    async with background(upstream, port):
        direct = await run_sdk_client(CLIENT, "http", f"http://127.0.0.1:{port}/mcp")
    check_direct(direct)

    port = free_port()
    command = shlex.join([sys.executable, str(UPSTREAM), "stdio", str(proxied_markers)])
    proxy = cli("serve", f"stdio:{command}", "--transport", "http", "--port", str(port))
    async with background(proxy, port):
        proxied = await run_sdk_client(CLIENT, "http", f"http://127.0.0.1:{port}/mcp")
    check_proxied(direct, proxied, proxied_markers)
