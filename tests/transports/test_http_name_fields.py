"""Mcp-Name is matched against the body field each named method mirrors (2026-07-28
streamable-http "Request Metadata"): tools/call and prompts/get ``name``, resources/read
``uri``, tasks/* ``taskId``: a wrong value is 400 with -32020 naming the body's value."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Server

from .app import modern, modern_headers, serving
from .http_client import request


def make_app() -> Server:
    app = Server("names")

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    @app.prompt
    def hello(name: str) -> str:
        return f"hello {name}"

    @app.resource("mem://doc")
    def doc() -> str:
        return "doc"

    return app


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, "add"),
    ("prompts/get", {"name": "hello", "arguments": {"name": "x"}}, "hello"),
    ("resources/read", {"uri": "mem://doc"}, "mem://doc"),
    ("tasks/get", {"taskId": "t-1"}, "t-1"),
]


@pytest.mark.parametrize(("method", "params", "value"), CASES)
async def test_mcp_name_is_matched_against_the_methods_own_field(
    method: str, params: dict[str, Any], value: str
) -> None:
    with trio.fail_after(10):
        async with serving(make_app()) as address:
            wrong = await request(
                address,
                "POST",
                headers=modern_headers(method, "other"),
                body=modern(1, method, params),
            )
            assert wrong.status == 400
            assert wrong.json()["error"] == {
                "code": -32020,
                "message": "Header mismatch: Mcp-Name header value 'other' does not match "
                f"body value {value!r}",
            }
            right = await request(
                address,
                "POST",
                headers=modern_headers(method, value),
                body=modern(2, method, params),
            )
            assert right.json().get("error", {}).get("code") != -32020
