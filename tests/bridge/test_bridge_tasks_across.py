"""Tasks across eras, the one direction the proxy bridges: a 2026-07-28 remote that runs a
handshake-era client's tool call as a task (tasks extension). That client did not ask for a
task (the proxy declares no tasks to it across eras), so the proxy polls the task to its end
and answers the tool's result; the task's input requests become server-to-client requests
to the client; the client's cancellation cancels the task."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime.bridge import proxy_server
from runtime.client import RequestTimeout, open_client

from .task_upstream import upstream


async def test_a_modern_remotes_task_is_run_to_its_end_for_a_handshake_client() -> None:
    cancelled: list[str] = []
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"ok": True}}

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream(cancelled).serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="modern")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era="handshake", elicitation=elicit
            ) as client:
                # A tool result, not the remote's task.
                raw = await client.request(
                    "tools/call", {"name": "build", "arguments": {"target": "x"}}
                )
                assert raw == {"content": [{"type": "text", "text": "built x"}], "isError": False}
                confirmed = await client.call_tool("confirm", {})
                assert confirmed.text == "accept {'ok': True}"
                assert asked == ["Go on?"]
                with pytest.raises(RequestTimeout):
                    await client.call_tool("forever", {}, timeout=1.5)
                for _ in range(300):
                    if cancelled:
                        break
                    await trio.sleep(0.01)
                assert cancelled == ["forever"]  # tasks/cancel reached the remote
            nursery.cancel_scope.cancel()
