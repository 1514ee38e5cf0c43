"""B3: in the handshake era ``ctx.info`` reaches a client that never called
``logging/setLevel`` (the documented default level, "debug", as the official SDK sends
everything); ``Server(default_log_level=None)`` waits for setLevel; 2026-07-28 requests
still log only with ``io.modelcontextprotocol/logLevel``."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.testing import open_client


def _app(**options: object) -> Server:
    app = Server("logs", **options)  # type: ignore[arg-type]

    @app.tool
    async def chatty(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.info("i")
        await ctx.error("e")
        return "done"

    return app


def _levels(client: Any) -> list[str]:
    notes = client.notifications
    return [n["params"]["level"] for n in notes if n["method"] == "notifications/message"]


async def test_handshake_client_gets_logs_without_set_level() -> None:
    with trio.fail_after(10):
        async with open_client(_app()) as client:
            await client.call_tool("chatty")
            assert _levels(client) == ["debug", "info", "error"]
            await client.request("logging/setLevel", {"level": "error"})
            await client.call_tool("chatty")
            assert _levels(client) == ["debug", "info", "error", "error"]


async def test_no_default_waits_for_set_level() -> None:
    with trio.fail_after(10):
        async with open_client(_app(default_log_level=None)) as client:
            await client.call_tool("chatty")
            assert _levels(client) == []


async def test_modern_requests_log_only_when_they_ask() -> None:
    with trio.fail_after(10):
        async with open_client(_app(), protocol_version="2026-07-28") as client:
            await client.call_tool("chatty")
            assert _levels(client) == []


def test_a_bad_default_is_refused() -> None:
    with pytest.raises(ValueError, match="default_log_level"):
        Server("x", default_log_level="loud")
