"""The official SDK client (subprocess) against examples/quickstart.py with a chain of
middleware installed, over Streamable HTTP in both eras and legacy SSE: the chain is
transparent (progress, errors, resources, prompts all as without it) and sees every call."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime.cli import load_target
from runtime.middleware import Metrics, RequestLogging, ResponseCache, Timing

from ..peers import run_sdk_client
from ..transports.app import serving
from ..transports.test_sdk_http import _check_quickstart


@pytest.mark.parametrize(
    ("mode", "kind", "path"),
    [("streamable", "http", "/mcp"), ("modern", "http", "/mcp"), ("sse", "sse", "/sse")],
)
async def test_sdk_client_through_a_chain(mode: str, kind: str, path: str) -> None:
    app = load_target("examples/quickstart.py")
    timing = Timing()
    metrics = Metrics()
    app.add_middleware(metrics, timing, RequestLogging(include_params=True), ResponseCache())
    async with serving(app, kind) as (host, port):
        with trio.fail_after(60):
            seen: dict[str, Any] = await run_sdk_client(
                "transports/sdk_http_client.py", mode, f"http://{host}:{port}{path}"
            )
    _check_quickstart(seen)
    assert timing.stats["tools/call"].count == 3  # add, divide, countdown
    assert timing.stats["tools/list"].count >= 1
    assert timing.stats["resources/read"].count == 1
    assert timing.stats["prompts/get"].count == 1
    text = metrics.render().decode()
    assert 'mcp_server_requests_total{method="tools/call",outcome="ok"} 3' in text
