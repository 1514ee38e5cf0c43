"""Open a raw peer to the wire-test server over every stream transport."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from runtime import Server
from runtime.transports import FramingName

from .wire import RawPeer, open_memory_peer

ROOT = Path(__file__).resolve().parent.parent
WIRE_SERVER = ROOT / "tests" / "servers" / "wire.py"

TRANSPORTS = [
    "memory-ndjson",
    "tcp-ndjson",
    "tcp-content-length",
    "unix-content-length",
    "stdio-ndjson",
    "stdio-content-length",
]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "runtime", *args]


@asynccontextmanager
async def open_stdio_peer(
    target: Path | str,
    framing: FramingName = "ndjson",
    *extra: str,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[RawPeer, trio.Process, Path]]:
    """Spawn ``mcp-runtime serve target`` over stdio; yields (peer, process, stderr path)."""
    with tempfile.NamedTemporaryFile("wb", suffix=".stderr", delete=False) as err_file:
        err_path = Path(err_file.name)
        process = await trio.lowlevel.open_process(
            cli("serve", str(target), "--framing", framing, *extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield RawPeer(process.stdin, process.stdout, framing), process, err_path
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                await process.stdin.aclose()
                with trio.move_on_after(5):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
        os.unlink(err_path)


@asynccontextmanager
async def open_peer(kind: str, server: Server) -> AsyncIterator[RawPeer]:
    """A raw peer to ``server`` (in-process) or to tests/servers/wire.py (stdio subprocess)."""
    transport, framing_text = kind.split("-", 1)
    framing: FramingName = "ndjson" if framing_text == "ndjson" else "content-length"
    if transport == "memory":
        async with open_memory_peer(server, framing) as peer:
            yield peer
        return
    if transport == "stdio":
        async with open_stdio_peer(WIRE_SERVER, framing) as (peer, _process, _err):
            yield peer
        return
    async with trio.open_nursery() as nursery:
        if transport == "tcp":
            address = await nursery.start(
                lambda task_status: server.serve_tcp(0, framing=framing, task_status=task_status)
            )
            stream: trio.abc.Stream = await trio.open_tcp_stream(address[0], address[1])
        else:
            path = os.path.join(tempfile.mkdtemp(), "mcp.sock")
            await nursery.start(
                lambda task_status: server.serve_unix(
                    path, framing=framing, task_status=task_status
                )
            )
            stream = await trio.open_unix_socket(path)
        async with stream:
            yield RawPeer(stream, stream, framing)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_served_http(
    server_file: str, *, env: dict[str, str] | None = None
) -> AsyncIterator[str]:
    """``mcp-runtime serve SERVER_FILE --transport http --port 0`` in a subprocess; yields the
    URL from its start-up line and terminates it on the way out."""
    with trio.fail_after(30):
        process = await trio.lowlevel.open_process(
            cli("serve", server_file, "--transport", "http", "--port", "0"),
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    assert process.stderr is not None
    try:
        seen = b""
        with trio.fail_after(30):
            while (match := re.search(rb"on (http://127\.0\.0\.1:\d+/mcp)", seen)) is None:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, seen.decode()
                seen += chunk
        yield match.group(1).decode()
    finally:
        process.terminate()
        await process.wait()


async def run_sdk_client(
    script: str, *args: str, timeout: float = 60, forbid_traceback: bool = False
) -> Any:
    """Run one of the official-SDK client scripts (asyncio, in its own process) and return
    the JSON it printed; fails the test with the script's stderr when it fails (or, with
    ``forbid_traceback``, when a traceback reached stderr: a stdio server's stderr is there)."""
    with trio.fail_after(timeout):
        result = await trio.run_process(
            [sys.executable, str(ROOT / "tests" / script), *args],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    if forbid_traceback:
        assert b"Traceback" not in result.stderr, result.stderr.decode()[-3000:]
    return json.loads(result.stdout)
