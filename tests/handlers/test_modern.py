"""The modern (2026-07-28) era beside the handshake era on the same connection."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import Context, JSONRPCError, ResourceNotFoundError, Server
from runtime.testing import open_client

from ..wire import open_memory_peer

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def make_app() -> Server:
    app = Server(
        "modern",
        "3.1.0",
        instructions="Modern test server.",
        cache_hints={"tools/list": (60_000, "public")},
    )

    @app.tool
    async def echo(text: str) -> str:
        return text

    @app.tool
    async def logs(ctx: Context) -> dict[str, Any]:
        await ctx.info("visible at info")
        await ctx.debug("hidden at info")
        return {"version": ctx.protocol_version, "modern": ctx.modern, "client": ctx.client_info}

    @app.resource("mem://cached", ttl_ms=5_000, cache_scope="public")
    def cached() -> str:
        return "cached"

    @app.resource("mem://missing/{name}")
    def missing(name: str) -> str:
        raise ResourceNotFoundError(f"mem://missing/{name}")

    @app.prompt
    def hello(name: str) -> str:
        return f"hello {name}"

    return app


async def test_discover() -> None:
    async with open_client(make_app(), protocol_version=MODERN) as client:
        result = await client.request("server/discover")
    assert result == {
        "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "capabilities": {
            "logging": {},
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
        },
        "instructions": "Modern test server.",
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "3.1.0"}},
        "ttlMs": 0,
        "cacheScope": "private",
    }


async def test_modern_results_carry_result_type_server_info_and_cache_hints() -> None:
    async with open_client(make_app(), protocol_version=MODERN) as client:
        tools = await client.request("tools/list")
        assert tools["resultType"] == "complete"
        assert (tools["ttlMs"], tools["cacheScope"]) == (60_000, "public")
        assert tools["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "modern"
        call = await client.call_tool("echo", {"text": "hi"})
        assert call["resultType"] == "complete" and "ttlMs" not in call  # not cacheable
        read = await client.read_resource("mem://cached")
        assert (read["ttlMs"], read["cacheScope"]) == (5_000, "public")
        prompts = await client.request("prompts/list")
        assert (prompts["ttlMs"], prompts["cacheScope"]) == (0, "private")


async def test_handshake_results_carry_none_of_it() -> None:
    async with open_client(make_app()) as client:
        tools = await client.request("tools/list")
        assert set(tools) == {"tools"}
        read = await client.read_resource("mem://cached")
        assert set(read) == {"contents"}


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe"]
)
async def test_handshake_only_methods_do_not_exist_in_the_modern_era(method: str) -> None:
    async with open_client(make_app(), protocol_version=MODERN) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request(method, {"uri": "x", "level": "info"})
    assert info.value.code == -32601


async def test_discover_does_not_exist_in_the_handshake_era() -> None:
    async with open_client(make_app()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("server/discover")
    assert info.value.code == -32601


async def test_unsupported_version_and_missing_meta() -> None:
    async with open_memory_peer(make_app()) as peer:
        reply = await peer.call(
            "tools/list",
            {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
        )
        assert reply["error"]["code"] == -32022
        assert reply["error"]["data"]["requested"] == "2099-01-01"
        assert "2026-07-28" in reply["error"]["data"]["supported"]
        reply = await peer.call(
            "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}
        )
        assert reply["error"]["code"] == -32602
        assert "clientCapabilities" in reply["error"]["message"]
        reply = await peer.call(
            "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": 2026}}
        )
        assert reply["error"]["code"] == -32602


async def test_both_eras_on_one_connection() -> None:
    async with open_memory_peer(make_app()) as peer:
        modern = await peer.call("tools/list", {"_meta": META})
        assert modern["result"]["resultType"] == "complete"
        init = await peer.initialize()
        assert init["result"]["protocolVersion"] == "2025-11-25"
        legacy = await peer.call("tools/list")
        assert "resultType" not in legacy["result"]
        modern = await peer.call(
            "tools/call", {"name": "echo", "arguments": {"text": "m"}, "_meta": META}
        )
        assert modern["result"]["resultType"] == "complete"


async def test_marker_inside_arguments_is_not_modern() -> None:
    async with open_client(make_app()) as client:
        result = await client.call_tool("echo", {"text": "io.modelcontextprotocol/protocolVersion"})
    assert "resultType" not in result


async def test_resource_not_found_code_per_era() -> None:
    async with open_client(make_app()) as legacy:
        with pytest.raises(JSONRPCError) as info:
            await legacy.read_resource("mem://missing/x")
        assert info.value.code == -32002
        with pytest.raises(JSONRPCError) as info:
            await legacy.read_resource("nope://")
        assert info.value.code == -32002
    async with open_client(make_app(), protocol_version=MODERN) as modern:
        with pytest.raises(JSONRPCError) as info:
            await modern.read_resource("mem://missing/x")
        assert info.value.code == -32602
        assert info.value.data == {"uri": "mem://missing/x"}


async def test_modern_logging_only_with_log_level_meta() -> None:
    async with open_client(make_app(), protocol_version=MODERN) as client:
        result = await client.call_tool("logs")
        assert client.notifications == []
        result = await client.request(
            "tools/call",
            {
                "name": "logs",
                "arguments": {},
                "_meta": {"io.modelcontextprotocol/logLevel": "info"},
            },
        )
        note = await client.wait_for_notification("notifications/message")
        assert note["params"]["data"] == "visible at info"
        assert len(client.notifications) == 1
    seen = result["structuredContent"]
    assert result["content"][0]["text"].startswith("{")  # the JSON text mirror
    assert seen["version"] == MODERN and seen["modern"] is True
    assert seen["client"]["name"] == "runtime.testing"
