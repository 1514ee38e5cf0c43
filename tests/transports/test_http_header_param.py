"""``runtime.Header``: a parameter mirrored into ``Mcp-Param-{Name}`` (2026-07-28, SEP-2243),
declared with the public API and checked by the Streamable HTTP transport."""

from __future__ import annotations

import base64
from typing import Annotated

import pytest
import trio

from runtime import Header, Server
from runtime.testing import open_client

from .app import modern, modern_headers, serving
from .http_client import request

app = Server("header-param")


@app.tool
def route(region: Annotated[str, Header("Region", description="Where")], query: str) -> str:
    return f"{region}:{query}"


async def test_header_annotation_is_in_the_input_schema() -> None:
    with trio.fail_after(10):
        async with open_client(app, protocol_version="2026-07-28") as client:
            (tool,) = await client.list_tools()
    region = tool["inputSchema"]["properties"]["region"]
    assert region == {"type": "string", "description": "Where", "x-mcp-header": "Region"}


async def test_the_transport_checks_the_mirrored_header() -> None:
    body = modern(1, "tools/call", {"name": "route", "arguments": {"region": "é", "query": "q"}})
    base = modern_headers("tools/call", "route")
    encoded = "=?base64?" + base64.b64encode("é".encode()).decode() + "?="
    with trio.fail_after(10):
        async with serving(app) as address:
            missing = await request(address, "POST", headers=base, body=body)
            assert missing.status == 400 and missing.json()["error"]["code"] == -32020
            wrong = await request(
                address,
                "POST",
                headers={**base, "mcp-param-region": "=?base64?SGVsbG8?="},
                body=body,
            )
            assert wrong.status == 400 and wrong.json()["error"]["code"] == -32020
            ok = await request(
                address, "POST", headers={**base, "mcp-param-region": encoded}, body=body
            )
            assert ok.status == 200, ok.body
            assert ok.json()["result"]["content"][0]["text"] == "é:q"


def test_a_name_that_is_not_a_header_token_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="not an HTTP header token"):
        Header("Région")
    with pytest.raises(ValueError):
        Header("Region:Primary")


def test_missing_capability_code_has_a_public_name() -> None:
    import runtime

    assert runtime.MISSING_CLIENT_CAPABILITY == -32021
    assert "MISSING_CLIENT_CAPABILITY" in runtime.__all__
