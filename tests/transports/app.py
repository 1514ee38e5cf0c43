"""The server the transport tests talk to, and helpers to serve it on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from runtime import Context, Limits, Server

from .http_client import HttpConn, connect

MODERN = "2026-07-28"
META = "io.modelcontextprotocol/protocolVersion"


def make_app(**limits: Any) -> tuple[Server, dict[str, list[str]]]:
    app = Server("transport-test", "1.0.0", limits=Limits(**limits))
    seen: dict[str, list[str]] = {"started": [], "cancelled": [], "finished": []}

    @app.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool
    async def countdown(start: int = 3, delay: float = 0.01, *, ctx: Context) -> str:
        """Count down, reporting progress."""
        for step in range(start):
            await ctx.report_progress(step + 1, start)
            await trio.sleep(delay)
        return "liftoff"

    @app.tool
    async def slow(tag: str, seconds: float = 30.0) -> str:
        """Sleep; records start, cancellation and finish."""
        seen["started"].append(tag)
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            seen["cancelled"].append(tag)
            raise
        seen["finished"].append(tag)
        return tag

    @app.tool(
        input_schema={
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
            },
            "required": ["region", "query"],
        }
    )
    def run_query(region: str, query: str) -> str:
        """A tool whose region is mirrored into the Mcp-Param-Region header."""
        return f"{region}:{query}"

    @app.tool
    async def ask_roots(*, ctx: Context) -> str:
        """Sends the client a roots/list request (a server-to-client request)."""
        peer = ctx._request.peer
        result = await peer.request("roots/list", {}, related=ctx.request_id, timeout=5)
        return ",".join(root["uri"] for root in result["roots"])

    return app, seen


@asynccontextmanager
async def serving(app: Server, kind: str = "http", **options: Any) -> AsyncIterator[Any]:
    """Serve ``app`` on an ephemeral loopback port; yields the bound (host, port)."""
    serve = {"http": app.serve_http, "ws": app.serve_websocket, "sse": app.serve_sse}[kind]
    async with trio.open_nursery() as nursery:
        address = await nursery.start(
            lambda task_status: serve(0, task_status=task_status, **options)
        )
        yield address[:2]
        app.shutdown()
        nursery.cancel_scope.deadline = trio.current_time() + 5


async def until(predicate: Any) -> None:
    """Wait until ``predicate()`` holds (the test's own deadline bounds the wait)."""
    while not predicate():  # noqa: ASYNC110 - polling state the server mutates
        await trio.sleep(0.01)


def init_body(version: str = "2025-11-25", request_id: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def call(request_id: Any, name: str, progress: Any = None, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress is not None:
        params["_meta"] = {"progressToken": progress}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = {
        **params.get("_meta", {}),
        META: MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def modern_headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    headers.update(extra)
    return headers


async def next_notification(conn: HttpConn, method: str) -> dict[str, Any]:
    """The next SSE event on ``conn``, decoded: a ``method`` notification (asserted)."""
    event = await conn.next_event()
    assert event is not None
    message: dict[str, Any] = json.loads(event.data)
    assert message["method"] == method, message
    return message


async def open_listen(address: Any, request_id: int, notifications: dict[str, Any]) -> HttpConn:
    """A 2026-07-28 ``subscriptions/listen`` POST held open as SSE, once acknowledged."""
    conn = await connect(address)
    body = modern(request_id, "subscriptions/listen", {"notifications": notifications})
    await conn.send("POST", "/mcp", headers=modern_headers("subscriptions/listen"), body=body)
    head = await conn.head()
    assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
    await next_notification(conn, "notifications/subscriptions/acknowledged")
    return conn
