"""Issue 4 acceptance: the official MCP SDK client against examples/quickstart.py over
Streamable HTTP (handshake era at 2025-11-25, and modern 2026-07-28) and legacy HTTP+SSE.

The server runs in this (trio) process on an ephemeral loopback port; the SDK (asyncio)
runs as a subprocess, as in tests/interop.
"""

from __future__ import annotations

from typing import Any

import trio

from runtime.cli import load_target

from ..peers import run_sdk_client
from .app import serving

CLIENT = "transports/sdk_http_client.py"


async def _run_sdk(mode: str, kind: str, path: str) -> dict[str, Any]:
    app = load_target("examples/quickstart.py")
    async with serving(app, kind) as (host, port):
        with trio.fail_after(60):
            seen: dict[str, Any] = await run_sdk_client(CLIENT, mode, f"http://{host}:{port}{path}")
    return seen


def _check_quickstart(seen: dict[str, Any]) -> None:
    assert [tool["name"] for tool in seen["tools"]["tools"]] == ["add", "countdown", "divide"]
    assert seen["add"]["content"] == [{"type": "text", "text": "42"}]
    assert seen["divide_by_zero"]["isError"] is True
    assert seen["countdown"]["content"][0]["text"] == "liftoff"
    assert [p[0] for p in seen["progress"]] == [1, 2, 3]
    assert seen["note"]["contents"][0]["text"] == "Hello from mcp-runtime!"
    assert seen["review"]["messages"][0]["content"]["text"].endswith("x = 1")


async def test_sdk_streamable_http_handshake_era() -> None:
    seen = await _run_sdk("streamable", "http", "/mcp")
    assert seen["initialize"]["protocolVersion"] == "2025-11-25"
    assert seen["initialize"]["serverInfo"] == {"name": "quickstart", "version": "1.0.0"}
    _check_quickstart(seen)
    assert seen["ping"] == {}


async def test_sdk_streamable_http_modern_era() -> None:
    seen = await _run_sdk("modern", "http", "/mcp")
    assert seen["protocolVersion"] == "2026-07-28"
    _check_quickstart(seen)


async def test_sdk_legacy_sse() -> None:
    seen = await _run_sdk("sse", "sse", "/sse")
    assert seen["initialize"]["serverInfo"]["name"] == "quickstart"
    _check_quickstart(seen)
