"""The official SDK client over Streamable HTTP against tests/composition/mounted_chains.py;
prints JSON. Usage: python sdk_chains_client.py URL"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PromptReference, ResourceTemplateReference


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text(result: Any) -> str:
    return str(result.content[0].text)


async def main(url: str) -> None:
    out: dict[str, Any] = {}
    seen: list[str] = []
    arrived = asyncio.Event()

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            method = getattr(getattr(message, "root", message), "method", None)
            seen.append(str(method))
            arrived.set()

    async def wait_for(method: str, count: int) -> None:
        while seen.count(method) < count:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 10)

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        out["search"] = text(await session.call_tool("kid_search", {"query": "x"}))
        out["own"] = text(await session.call_tool("own", {"text": "y"}))
        out["greet"] = dump(await session.get_prompt("kid_greet", {"who": "ann"}))
        out["note"] = dump(await session.read_resource("notes://kid/abc"))
        out["complete_prompt"] = dump(
            await session.complete(
                PromptReference(type="ref/prompt", name="kid_greet"), {"name": "who", "value": "b"}
            )
        )
        out["complete_template"] = dump(
            await session.complete(
                ResourceTemplateReference(type="ref/resource", uri="notes://kid/{name}"),
                {"name": "name", "value": "n"},
            )
        )
        out["complete_parent"] = dump(
            await session.complete(
                PromptReference(type="ref/prompt", name="parent_prompt"),
                {"name": "topic", "value": "t"},
            )
        )
        out["events_before"] = json.loads(text(await session.call_tool("get_events", {})))

        await session.call_tool("mount_late", {})
        await wait_for("notifications/tools/list_changed", 1)
        out["tools_mounted"] = [t.name for t in (await session.list_tools()).tools]
        out["where"] = text(await session.call_tool("late_where", {}))
        out["complete_late"] = dump(
            await session.complete(
                PromptReference(type="ref/prompt", name="late_pick"),
                {"name": "color", "value": "g"},
            )
        )
        await session.call_tool("unmount_late", {})
        await wait_for("notifications/tools/list_changed", 2)
        out["tools_unmounted"] = [t.name for t in (await session.list_tools()).tools]
        await asyncio.sleep(0.2)  # the late lifespan exits in its own task
        out["events_after"] = json.loads(text(await session.call_tool("get_events", {})))
    out["notifications"] = seen
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
