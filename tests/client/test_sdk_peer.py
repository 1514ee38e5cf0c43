"""Against the official MCP Python SDK's server (a subprocess): stdio and Streamable HTTP
(stateful SSE and stateless JSON), both eras, through the API and through the CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from runtime.client import PeerError, open_client

from .targets import ROOT, SDK_SERVER

SDK_STDIO = f"{sys.executable} {SDK_SERVER} stdio"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def sdk_http(mode: str, port: int | None = None) -> AsyncIterator[tuple[str, trio.Process]]:
    """The SDK server over HTTP (``http-sse``: stateful, SSE answers; ``http-json``:
    stateless, JSON answers) on ``port``; yields (URL, process) once it accepts."""
    port = port or free_port()
    process = await trio.lowlevel.open_process(
        [sys.executable, str(SDK_SERVER), mode, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with trio.fail_after(20):
            while True:
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                except OSError:
                    await trio.sleep(0.05)
                    continue
                await stream.aclose()
                break
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


TARGETS = ["stdio", "http-sse", "http-json"]


@asynccontextmanager
async def sdk_target(kind: str) -> AsyncIterator[str]:
    if kind == "stdio":
        yield SDK_STDIO
        return
    async with sdk_http(kind) as (url, _process):
        yield url


@pytest.mark.parametrize("era", ["modern", "handshake", "auto"])
@pytest.mark.parametrize("kind", TARGETS)
async def test_sdk_server(kind: str, era: str) -> None:
    with trio.fail_after(40):
        async with sdk_target(kind) as target, open_client(target, era=era) as client:  # type: ignore[arg-type]
            assert client.era == ("modern" if era == "auto" else era)
            assert client.description is not None and client.description.server_info is not None
            assert client.description.server_info.name == "bench-sdk"
            tools = await client.all_tools()
            # The benchmark server's tools (echo, and the big-payload ones): all listed.
            assert {"echo", "size", "touch"} <= {tool.name for tool in tools}
            assert tools[0].input_schema["required"] == ["text"]
            result = await client.call_tool("echo", {"text": "über"})
            assert result.text == "über" and not result.is_error
            resources = await client.all_resources()
            assert {"mem://blob", "mem://text/1"} <= {r.uri for r in resources}
            read = await client.read_resource("mem://blob")
            assert read.contents[0].text is not None and len(read.contents[0].text) == 1024
            with pytest.raises(PeerError):
                await client.read_resource("mem://missing")
            await client.ping()


async def run_cli(*args: str) -> tuple[int, str, str]:
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, "-m", "runtime", *args],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


@pytest.mark.parametrize("kind", TARGETS)
async def test_cli_against_the_sdk_server(kind: str) -> None:
    async with sdk_target(kind) as target:
        code, out, err = await run_cli("inspect", target)
        assert code == 0, err
        assert "server: bench-sdk 1.0.0" in out and "echo(text: string)" in out
        assert "mem://blob" in out
        code, out, err = await run_cli("inspect", target, "--json", "--era", "handshake")
        assert code == 0, err
        described = json.loads(out)
        assert described["era"] == "handshake"
        assert described["tools"][0]["inputSchema"]["required"] == ["text"]
        code, out, err = await run_cli("call", target, "echo", "text=42")
        # "42" stays a string: the schema says text is a string.
        assert (code, out) == (0, "42\n"), err
        code, out, err = await run_cli("call", target, "echo", "--json", '{"text": "hi"}')
        assert (code, out) == (0, "hi\n"), err
        code, out, err = await run_cli("call", target, "nope")
        assert code == 2 and "no tool 'nope'" in err
        code, out, err = await run_cli("read", target, "mem://blob")
        assert code == 0 and len(out.strip()) == 1024
        code, out, err = await run_cli("list", target, "resources", "--json")
        assert code == 0 and json.loads(out)[0]["uri"] == "mem://blob"


@asynccontextmanager
async def sdk_sse() -> AsyncIterator[str]:
    port = free_port()
    process = await trio.lowlevel.open_process(
        [sys.executable, str(ROOT / "tests" / "client" / "sdk_sse_server.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with trio.fail_after(20):
            while True:
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                except OSError:
                    await trio.sleep(0.05)
                    continue
                await stream.aclose()
                break
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        with trio.CancelScope(shield=True):
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()


@pytest.mark.parametrize("peer", ["sdk", "ours"])
async def test_legacy_http_sse(peer: str) -> None:
    """2024-11-05 HTTP+SSE: a URL ending in /sse; handshake era only."""
    from .targets import load_app

    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:
            if peer == "sdk":
                context = sdk_sse()
            else:
                address = await nursery.start(load_app().serve_http)
                context = _constant(f"http://127.0.0.1:{address[1]}/sse")
            async with context as url, open_client(url) as client:
                assert client.era == "handshake"
                assert client.protocol_version in ("2024-11-05", "2025-11-25", "2025-06-18")
                tools = await client.all_tools()
                assert "echo" in [tool.name for tool in tools]
                assert (await client.call_tool("echo", {"text": "legacy"})).text == "legacy"
                await client.ping()
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def _constant(value: str) -> AsyncIterator[str]:
    yield value
