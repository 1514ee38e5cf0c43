"""Drive examples/subscriptions.py with the official SDK: the 2025-11-25 ``ClientSession``
(resources/subscribe, list_changed) and the 2026-07-28 ``Client.listen()``; print JSON.
Usage: python sdk_subscriptions_client.py -- COMMAND [ARGS...]
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters, stdio_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def handshake(params: StdioServerParameters, out: dict[str, Any]) -> None:
    seen: list[Any] = []
    arrived = asyncio.Event()

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            seen.append(dump(message))
            arrived.set()

    async def wait_for(method: str) -> None:
        while not any(note.get("method") == method for note in seen):
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 10)

    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        out["capabilities"] = dump((await session.initialize()).capabilities)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await session.subscribe_resource("notes://todo")
        await session.call_tool("write_note", {"name": "todo", "text": "ship"})
        await wait_for("notifications/resources/updated")
        await session.call_tool("admin_mode", {"enabled": True})
        await wait_for("notifications/tools/list_changed")
        out["tools_after"] = [tool.name for tool in (await session.list_tools()).tools]
    out["handshake_notifications"] = seen


async def modern(params: StdioServerParameters, out: dict[str, Any]) -> None:
    client_cm = Client(params, mode="2026-07-28")  # type: ignore[arg-type]
    async with client_cm as client:
        stream = client.listen(
            tools_list_changed=True,
            prompts_list_changed=True,
            resource_subscriptions=["notes://todo", "notes://x"],
        )
        async with stream as sub:
            out["honored"] = dump(sub.honored)
            await client.call_tool("write_note", {"name": "todo", "text": "again"})
            await client.call_tool("admin_mode", {"enabled": True})
            events = []
            async with asyncio.timeout(10):
                async for event in sub:
                    events.append(type(event).__name__)
                    if len(events) == 2:
                        break
            out["events"] = events


async def main(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    out: dict[str, Any] = {}
    await handshake(params, out)
    await modern(params, out)
    print(json.dumps(out))


if __name__ == "__main__":
    sep, *rest = sys.argv[1:]
    assert sep == "--"
    asyncio.run(main(rest))
