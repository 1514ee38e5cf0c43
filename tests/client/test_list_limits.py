"""The client's ``all_*`` listings against a server that pages without end: they stop at
``max_list_pages`` or ``max_list_items``, naming the limit, and at a cursor seen before; and
a server file that cannot start is started once, its exit status and stderr kept on the
error (the CLI's ``test_cli_hostile.py`` and ``test_cli.py`` drive the same through the CLI)."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.client import BadMessage, ClientError, TransportLost, open_client

#: Answers one request: {"result": ...} or {"error": ...}; None leaves it unanswered.
Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


def discovered(capabilities: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "result": {
            "supportedVersions": ["2026-07-28"],
            "capabilities": capabilities,
            "resultType": "complete",
            **more,
        }
    }


@asynccontextmanager
async def ndjson_server(answer: Answer) -> AsyncIterator[str]:
    """A raw NDJSON server on a loopback TCP port; yields its ``tcp://`` target."""

    async def handle(stream: trio.SocketStream) -> None:
        buffer = b""
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                *lines, buffer = (buffer + data).split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "id" not in message or "method" not in message:
                        continue
                    reply = await answer(message)
                    if reply is not None:
                        body = {"jsonrpc": "2.0", "id": message["id"], **reply}
                        await stream.send_all(json.dumps(body).encode() + b"\n")

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        )
        yield f"tcp://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


def endless_pages(served: list[str], delay: float = 0.0) -> Answer:
    """Tools, 50 a page, each page with a new ``nextCursor``."""

    async def answer(message: dict[str, Any]) -> dict[str, Any] | None:
        if message["method"] == "server/discover":
            return discovered({"tools": {}})
        if message["method"] == "tools/list":
            await trio.sleep(delay)
            page = len(served)
            served.append(str((message.get("params") or {}).get("cursor")))
            tools = [{"name": f"t{page}-{n}", "inputSchema": {"type": "object"}} for n in range(50)]
            return {"result": {"tools": tools, "nextCursor": f"page-{page + 1}"}}
        return {"error": {"code": -32601, "message": "Method not found"}}

    return answer


async def test_the_item_limit_is_configurable_and_named() -> None:
    served: list[str] = []
    async with ndjson_server(endless_pages(served)) as target:
        with trio.fail_after(20):
            async with open_client(target, max_list_items=120) as client:
                with pytest.raises(ClientError, match=r"more than 120 items \(max_list_items\)"):
                    await client.all_tools()
                assert len(served) == 3  # 150 items on three pages: past 120 on the third
            with pytest.raises(ValueError, match="max_list_pages"):
                async with open_client(target, max_list_pages=0):
                    pass  # pragma: no cover


async def test_the_page_limit_and_a_repeated_cursor() -> None:
    served: list[str] = []
    async with ndjson_server(endless_pages(served)) as target:
        with trio.fail_after(20):
            async with open_client(target, max_list_pages=7) as client:
                with pytest.raises(ClientError, match=r"more than 7 pages \(max_list_pages\)"):
                    await client.all_tools()
                assert len(served) == 7
    cursors = iter(["a", "b", "a"])

    async def looping(message: dict[str, Any]) -> dict[str, Any] | None:
        if message["method"] == "server/discover":
            return discovered({"tools": {}})
        tools = [{"name": "t", "inputSchema": {"type": "object"}}]
        return {"result": {"tools": tools, "nextCursor": next(cursors)}}

    async with ndjson_server(looping) as target:
        with trio.fail_after(20):
            async with open_client(target) as client:
                with pytest.raises(BadMessage, match="tools/list: the server repeated the cursor"):
                    await client.all_tools()


async def test_a_server_file_that_cannot_start_is_started_once(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    target = tmp_path / "server.py"
    target.write_text(f"open({str(counter)!r}, 'a').write('x')\nraise RuntimeError('boom')\n")
    with trio.fail_after(30), pytest.raises(TransportLost) as caught:
        async with open_client(str(target)):
            pass  # pragma: no cover
    assert caught.value.exit_status == 2
    assert caught.value.stderr[-1].startswith("mcp-runtime: error: importing ")
    assert "RuntimeError: boom" in caught.value.stderr[-1]
    assert len(caught.value.stderr) == 1  # its own lines only, once
    assert counter.read_text() == "x"
