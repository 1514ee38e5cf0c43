"""Serve tests/client/server.py over each transport and give the client's target for it."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from runtime import Server

ROOT = Path(__file__).resolve().parent.parent.parent
SERVER_FILE = ROOT / "tests" / "client" / "server.py"
SDK_SERVER = ROOT / "benchmarks" / "servers" / "sdk_server.py"

#: Every transport the client speaks, with its framing where it has one.
TRANSPORTS = [
    "stdio-ndjson",
    "stdio-content-length",
    "tcp-ndjson",
    "unix-content-length",
    "pipe-ndjson",
    "ws",
    "http",
]


def load_app(path: Path = SERVER_FILE) -> Server:
    """A fresh instance of the test server module (its globals are per-test), or of
    another server file's ``app``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_client_test_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: Server = module.app
    return app


@asynccontextmanager
async def serve_target(kind: str, app: Server | None = None) -> AsyncIterator[tuple[str, str]]:
    """Yield (target, framing) for ``kind``; in-process servers run for the body."""
    transport, _, framing = kind.partition("-")
    framing = framing or "ndjson"
    if transport == "stdio":
        yield f"{SERVER_FILE}", framing
        return
    app = app or load_app()
    async with trio.open_nursery() as nursery:
        target: str
        if transport == "tcp":
            address: Any = await nursery.start(
                lambda task_status: app.serve_tcp(0, framing=framing, task_status=task_status)  # type: ignore[arg-type]
            )
            target = f"tcp://127.0.0.1:{address[1]}"
        elif transport == "unix":
            path = os.path.join(tempfile.mkdtemp(), "mcp.sock")
            await nursery.start(
                lambda task_status: app.serve_unix(path, framing=framing, task_status=task_status)  # type: ignore[arg-type]
            )
            target = f"unix:{path}"
        elif transport == "pipe":
            directory = os.path.join(tempfile.mkdtemp(), "pipes")
            await nursery.start(
                lambda task_status: app.serve_pipe(
                    directory, framing=framing, task_status=task_status
                )  # type: ignore[arg-type]
            )
            target = f"pipe:{directory}"
        elif transport == "ws":
            address = await nursery.start(app.serve_websocket)
            target = f"ws://127.0.0.1:{address[1]}/mcp"
        elif transport == "http":
            address = await nursery.start(app.serve_http)
            target = f"http://127.0.0.1:{address[1]}/mcp"
        else:  # pragma: no cover
            raise ValueError(kind)
        yield target, framing
        nursery.cancel_scope.cancel()


def python() -> str:
    return sys.executable
