"""examples/embedded_worker.py: the application's workers and its MCP endpoint share one
nursery; tools reach the application state over real HTTP; shutdown ends both."""

from __future__ import annotations

import functools
from typing import Any

import trio
from embedded_worker import main

from tests.transports.app import modern, modern_headers
from tests.transports.http_client import request


async def call(address: Any, tool: str, **arguments: Any) -> Any:
    body = modern(1, "tools/call", {"name": tool, "arguments": arguments})
    response = await request(address, "POST", headers=modern_headers("tools/call", tool), body=body)
    assert response.status == 200, response.body
    return response.json()["result"]["structuredContent"]


async def test_tools_drive_the_application_and_shutdown_ends_it() -> None:
    shutdown = trio.Event()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            run = functools.partial(main, 0, work_seconds=0.1, shutdown=shutdown)
            address = await nursery.start(run)
            first = await call(address, "submit", word="trio")
            second = await call(address, "submit", word="nursery")
            # A worker may pick the job up before the answer is encoded.
            assert first["id"] == 1 and first["word"] == "trio" and first["result"] is None
            assert first["status"] in ("queued", "running")
            assert second["id"] == 2
            # Poll as an MCP client would (the server's state has no event to wait on).
            while (await call(address, "status", job_id=2))["status"] != "done":  # noqa: ASYNC110
                await trio.sleep(0.02)
            assert (await call(address, "status", job_id=1))["result"] == "oirt"
            assert await call(address, "counts") == {"queued": 0, "running": 0, "done": 2}
            shutdown.set()
        # main returned: the nursery closed with no task left behind.
    with trio.fail_after(5), trio.move_on_after(0.5):
        # Nothing listens any more.
        try:
            await trio.open_tcp_stream(*address)
        except OSError:
            return
    raise AssertionError("the MCP endpoint still accepts connections after shutdown")
