"""The official SDK client over Streamable HTTP against tests/composition/mounted_lists.py;
prints JSON. Usage: python sdk_lists_client.py URL"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def main(url: str) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {}
    seen: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            seen.append(str(getattr(getattr(message, "root", message), "method", None)))
            arrived.set()

    async def wait_for(method: str, count: int) -> None:
        while seen.count(method) < count:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 10)

    def text(result: Any) -> str:
        return str(result.content[0].text)

    async def lists(session: ClientSession) -> dict[str, Any]:
        return {
            "tools": {t.name: t.description for t in (await session.list_tools()).tools},
            "prompts": {p.name: p.description for p in (await session.list_prompts()).prompts},
            "resources": {
                str(r.uri): r.description for r in (await session.list_resources()).resources
            },
            "templates": {
                t.uri_template: t.description
                for t in (await session.list_resource_templates()).resource_templates
            },
        }

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        out["before"] = await lists(session)
        slow = asyncio.create_task(session.call_tool("slow", {}))  # in flight across mounts
        await asyncio.sleep(0.2)
        await session.call_tool("mount_kid", {})
        await wait_for("notifications/tools/list_changed", 1)
        out["kid"] = await lists(session)
        out["search"] = text(await session.call_tool("kid_search", {"query": "q"}))
        out["hidden_call"] = text(await session.call_tool("kid_hidden_tool", {}))
        await session.call_tool("mount_late", {})
        await wait_for("notifications/tools/list_changed", 2)
        out["late"] = await lists(session)
        out["where"] = text(await session.call_tool("late_where", {}))
        await session.call_tool("unmount_late", {})
        await wait_for("notifications/tools/list_changed", 3)
        out["unmounted"] = await lists(session)
        await session.call_tool("release", {})
        out["slow"] = text(await asyncio.wait_for(slow, 10))
        out["events"] = json.loads(text(await session.call_tool("get_events", {})))
    out["notifications"] = seen
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
