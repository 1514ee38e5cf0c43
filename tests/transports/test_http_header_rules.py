"""The ``Mcp-Param-*`` rules of a tool (2026-07-28 streamable-http "Schema Extension") are
read from its schema once and follow the tool list: a tool removed and registered again with
other ``x-mcp-header`` annotations is checked by its new rules on the next POST, a tool added
while serving by its own, and an unknown tool is answered as before."""

from __future__ import annotations

from typing import Annotated

import trio

from runtime import Header, Server

from .app import modern, modern_headers, serving
from .http_client import request


def _server() -> Server:
    app = Server("header-rules")

    @app.tool
    def route(region: Annotated[str, Header("Region")], query: str) -> str:
        return f"{region}:{query}"

    return app


async def test_the_rules_follow_the_tool_list_while_serving() -> None:
    app = _server()
    body = modern(1, "tools/call", {"name": "route", "arguments": {"region": "eu", "query": "q"}})
    base = modern_headers("tools/call", "route")
    with trio.fail_after(10):
        async with serving(app) as address:
            missing = await request(address, "POST", headers=base, body=body)
            assert missing.status == 400 and missing.json()["error"]["code"] == -32020
            assert b"Mcp-Param-region" in missing.body
            ok = await request(
                address, "POST", headers={**base, "mcp-param-region": "eu"}, body=body
            )
            assert ok.status == 200 and ok.json()["result"]["content"][0]["text"] == "eu:q"

            # Registered again without the annotation: no header rule any more.
            app.registry.remove_tool("route")

            @app.tool
            def route(region: str, query: str) -> str:
                return f"plain {region}:{query}"

            plain = await request(address, "POST", headers=base, body=body)
            assert plain.status == 200, plain.body
            assert plain.json()["result"]["content"][0]["text"] == "plain eu:q"

            # A tool added while serving, with a rule of its own.
            @app.tool
            def zone(zone: Annotated[str, Header("Zone")]) -> str:
                return zone

            zone_body = modern(2, "tools/call", {"name": "zone", "arguments": {"zone": "z1"}})
            zone_base = modern_headers("tools/call", "zone")
            refused = await request(address, "POST", headers=zone_base, body=zone_body)
            assert refused.status == 400 and refused.json()["error"]["code"] == -32020
            taken = await request(
                address, "POST", headers={**zone_base, "mcp-param-zone": "z1"}, body=zone_body
            )
            assert taken.status == 200 and taken.json()["result"]["content"][0]["text"] == "z1"


async def test_an_unknown_tool_has_no_rules_and_gets_its_error() -> None:
    app = _server()
    body = modern(3, "tools/call", {"name": "nope", "arguments": {"region": "eu"}})
    with trio.fail_after(10):
        async with serving(app) as address:
            for _ in range(2):
                reply = await request(
                    address, "POST", headers=modern_headers("tools/call", "nope"), body=body
                )
                assert reply.status == 200, reply.body
                error = reply.json()["error"]
                assert error["code"] == -32602 and "nope" in error["message"]
