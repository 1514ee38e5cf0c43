"""Issue 21 item 3: one upstream session per downstream session, and the remote's
subscriptions, list changes and log messages forwarded to the client they belong to.

Two concurrent official SDK client sessions (Streamable HTTP) -> ``mcp-runtime serve URL
--transport http`` -> the official SDK's MCPServer (Streamable HTTP), which filters log
messages by each session's ``logging/setLevel`` and sends resource updates to each session's
``resources/subscribe``-d URIs: each client must see exactly what its own state lets through.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from ..peers import ROOT, run_sdk_client
from .test_bridge_sdk import background, free_port, proxy_cli

UPSTREAM = ROOT / "tests" / "bridge" / "sdk_sessions_upstream.py"
TWO_CLIENTS = "bridge/sdk_two_clients.py"
MODERN_LISTEN = "bridge/sdk_modern_listen.py"


def check_per_session(seen: dict[str, Any]) -> None:
    # Two upstream sessions set a level (one each), not one shared.
    assert seen["upstream_sessions"] == {"result": 2}
    # a asked for debug and up, b for error only: the remote filtered per session.
    assert seen["logs_a"] == [
        "debug:debug message",
        "info:info message",
        "warning:warning message",
        "error:error message",
    ]
    assert seen["logs_b"] == ["error:error message"]
    updated = "notifications/resources/updated"
    changed = ["notifications/tools/list_changed", ""]
    # a subscribed to mem://a, b to mem://b; after a unsubscribed, touching mem://a reached
    # nobody. Both sessions were told the tool list changed.
    assert seen["notes_a"] == [[updated, "mem://a"], changed]
    assert seen["notes_b"] == [[updated, "mem://b"], changed]
    assert "grown" in seen["tools_after_grow"]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_two_sdk_clients_get_their_own_upstream_sessions(transport: str) -> None:
    """``http``: the remote on Streamable HTTP. ``sse``: on the legacy 2024-11-05 HTTP+SSE
    transport (the SDK's ``run("sse")``), the proxy's client reaching it at ``/sse``."""
    port = free_port()
    upstream = [sys.executable, str(UPSTREAM), transport, str(port)]
    async with background(upstream, port):
        proxy_port = free_port()
        path = "/mcp" if transport == "http" else "/sse"
        proxy = proxy_cli(
            f"http://127.0.0.1:{port}{path}",
            str(proxy_port),
            # The SDK server also speaks 2026-07-28 (stateless: no sessions to keep apart);
            # pinned to the handshake era, where the remote keeps state per session.
            "--upstream-era",
            "handshake",
        )
        async with background(proxy, proxy_port):
            seen = await run_sdk_client(TWO_CLIENTS, f"http://127.0.0.1:{proxy_port}/mcp")
    caps = seen["initialize_a"]["capabilities"]
    assert caps["resources"]["subscribe"] is True  # the remote's, as it declares them
    assert "logging" in caps
    check_per_session(seen)


async def test_two_modern_sdk_clients_listen_through_the_proxy() -> None:
    """2026-07-28 on both sides: two SDK ``mcp.Client``s hold ``subscriptions/listen``
    through the proxy; the SDK's MCPServer publishes list changes and resource updates on its
    subscription bus; each listen gets what its filter asked for."""
    port = free_port()
    upstream = [sys.executable, str(UPSTREAM), "http", str(port)]
    async with background(upstream, port):
        proxy_port = free_port()
        proxy = proxy_cli(
            f"http://127.0.0.1:{port}/mcp",
            str(proxy_port),
        )
        async with background(proxy, proxy_port):
            seen = await run_sdk_client(MODERN_LISTEN, f"http://127.0.0.1:{proxy_port}/mcp")
    assert seen["version"] == "2026-07-28"
    assert seen["honored_a"]["toolsListChanged"] is True
    assert seen["honored_a"]["resourceSubscriptions"] == ["mem://a"]
    assert seen["honored_b"]["toolsListChanged"] is True
    assert "ResourceUpdated:mem://a" in seen["seen_a"]
    assert "ToolsListChanged:" in seen["seen_a"]
    assert set(seen["seen_a"]) == {"ToolsListChanged:", "ResourceUpdated:mem://a"}
    assert set(seen["seen_b"]) == {"ToolsListChanged:"}  # b asked for no resource
