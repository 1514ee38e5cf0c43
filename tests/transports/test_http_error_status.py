"""A 2026-07-28 POST's status comes from the reply's type (``ErrorReply`` for errors), not a
reading of its bytes (issue 22 target 1): the statuses of basic/transports/streamable-http
hold on the direct path, for errors the dispatcher and handlers make, and a result that
mentions an error is 200."""

from __future__ import annotations

from typing import Any

import trio

from runtime import JSONRPCError, Server

from .app import modern, modern_headers, serving
from .http_client import request


def make_app() -> Server:
    app = Server("statuses")

    @app.tool
    async def needs_roots() -> str:
        raise JSONRPCError(-32021, "Missing required client capability: roots")

    @app.tool
    async def bad_input() -> str:
        raise JSONRPCError(-32602, "bad input")

    @app.tool
    async def mimic() -> str:
        return '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}'

    return app


async def _call(address: object, request_id: int, name: str) -> tuple[int, Any]:
    body = modern(request_id, "tools/call", {"name": name, "arguments": {}})
    response = await request(address, "POST", headers=modern_headers("tools/call", name), body=body)
    return response.status, response.json()


async def test_statuses_of_direct_path_answers() -> None:
    with trio.fail_after(10):
        async with serving(make_app()) as address:
            status, reply = await _call(address, 1, "needs_roots")
            assert status == 400 and reply["error"]["code"] == -32021
            status, reply = await _call(address, 2, "bad_input")
            assert status == 200 and reply["error"]["code"] == -32602
            status, reply = await _call(address, 3, "mimic")
            assert status == 200 and "result" in reply
            unknown = await request(
                address,
                "POST",
                headers=modern_headers("no/such"),
                body=modern(4, "no/such"),
            )
            assert unknown.status == 404 and unknown.json()["error"]["code"] == -32601
