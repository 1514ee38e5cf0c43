"""Two concurrent official SDK client sessions (Streamable HTTP) through one proxy, each with
state of its own on the remote (tests/bridge/sdk_sessions_upstream.py); print what each saw.

python sdk_two_clients.py URL
Run as a subprocess by tests/bridge/test_bridge_sessions.py (the SDK runs on asyncio).
"""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import AsyncExitStack
from typing import Any

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


class Seen:
    """What one session received: log messages and other notifications, in order."""

    def __init__(self) -> None:
        self.logs: list[str] = []
        self.notes: list[list[str]] = []

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(f"{params.level}:{params.data}")

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method is None or method == "notifications/message":
            return
        params = getattr(root, "params", None)
        uri = getattr(params, "uri", None)
        self.notes.append([method, str(uri) if uri is not None else ""])


async def main(url: str) -> None:
    out: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        seen = {"a": Seen(), "b": Seen()}
        for name in ("a", "b"):
            read, write, *_ = await stack.enter_async_context(streamable_http_client(url))
            session = await stack.enter_async_context(
                ClientSession(
                    read,
                    write,
                    logging_callback=seen[name].on_log,
                    message_handler=seen[name].on_message,
                )
            )
            out[f"initialize_{name}"] = (await session.initialize()).model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
            sessions[name] = session
        a, b = sessions["a"], sessions["b"]
        await asyncio.gather(a.set_logging_level("debug"), b.set_logging_level("error"))
        await asyncio.gather(a.subscribe_resource("mem://a"), b.subscribe_resource("mem://b"))
        sessions_seen = await a.call_tool("sessions", {})
        out["upstream_sessions"] = sessions_seen.structured_content
        await a.call_tool("shout", {})
        await a.call_tool("touch", {"uri": "mem://a"})
        await a.call_tool("touch", {"uri": "mem://b"})
        await b.call_tool("grow", {})
        await asyncio.sleep(1.0)  # notifications of other sessions arrive on their streams
        await a.unsubscribe_resource("mem://a")
        await b.call_tool("touch", {"uri": "mem://a"})  # a no longer subscribed: nobody
        await asyncio.sleep(0.5)
        out["tools_after_grow"] = sorted(t.name for t in (await b.list_tools()).tools)
        for name in ("a", "b"):
            out[f"logs_{name}"] = seen[name].logs
            out[f"notes_{name}"] = seen[name].notes
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
