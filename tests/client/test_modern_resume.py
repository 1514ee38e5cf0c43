"""2026-07-28 over Streamable HTTP: a request whose connection drops mid-answer is re-sent
only when safe to repeat (lists, reads, server/discover, tasks/get); any other fails with
TransportLost and is not re-sent (docs/client.md "Reconnection policy").

The server is a process of its own (tests/client/dropping_server.py): our test server behind
a front that lets the chosen request reach the server, then closes the connection after half
of the answer's first bytes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from runtime.client import Backoff, Client, TransportLost, open_client

from .targets import ROOT
from .test_sdk_peer import free_port

SCRIPT = ROOT / "tests" / "client" / "dropping_server.py"
FAST = Backoff(initial=0.05, cap=0.2, max_attempts=10, max_elapsed=5)


@asynccontextmanager
async def dropping_server(*drops: str) -> AsyncIterator[str]:
    port = free_port()
    process = await trio.lowlevel.open_process(
        [sys.executable, str(SCRIPT), str(port), *drops],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(20):
            while True:
                try:
                    await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await trio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()


async def forwarded(client: Client, method: str) -> int:
    result = await client.call_tool("forwarded_count", {"method": method})
    assert isinstance(result.structured_content, dict)
    count = result.structured_content["result"]
    assert isinstance(count, int)
    return count


async def test_a_call_dropped_mid_answer_is_not_re_sent() -> None:
    async with dropping_server("tools/call:1") as url:
        with trio.fail_after(30):
            async with open_client(url, era="modern", backoff=FAST) as client:
                with pytest.raises(TransportLost, match="not safe to repeat") as caught:
                    await client.call_tool("touch", {"count": 1})
                assert "tools/call" in str(caught.value)
                # It reached the server once (the counter moved) and was never sent again:
                # this call is the second tools/call the server sees.
                assert await forwarded(client, "tools/call") == 2
                assert (await client.read_resource("data://counter")).contents[0].text == "1"


@pytest.mark.parametrize(
    "method",
    ["tools/list", "resources/read", "resources/templates/list", "server/discover", "tasks/get"],
)
async def test_a_safe_request_dropped_mid_answer_is_re_sent(method: str) -> None:
    # server/discover: the first is the client's era probe; drop the second (a ping).
    nth = 2 if method == "server/discover" else 1
    async with dropping_server(f"{method}:{nth}") as url:
        with trio.fail_after(30):
            async with open_client(url, era="auto", backoff=FAST) as client:
                assert client.era == "modern"
                if method == "tools/list":
                    names = {tool.name for tool in (await client.list_tools()).tools}
                    assert {"echo", "forwarded_count"} <= names
                elif method == "resources/read":
                    answer = await client.read_resource("greeting://ada")
                    assert answer.contents[0].text == "Hello, ada!"
                elif method == "resources/templates/list":
                    templates = (await client.list_resource_templates()).resource_templates
                    assert [t.uri_template for t in templates] == ["greeting://{name}"]
                elif method == "server/discover":
                    await client.ping()
                else:
                    task = await client.call_tool_as_task("build", {"target": "x"})
                    got = await client.get_task(task.task_id)
                    assert got.task_id == task.task_id
                assert await forwarded(client, method) == nth + 1  # sent again, once
