"""The official SDK client through a load balancer: a whole handshake-era conversation.
Usage: python sdk_replica_client.py URL. Prints JSON of what it saw."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(url: str) -> None:
    out: dict[str, Any] = {"notifications": [], "asked": []}
    got = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            out.setdefault("errors", []).append(repr(message))
            return
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method is not None:
            out["notifications"].append(method)
            got.set()

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        out["asked"].append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def until(method: str) -> bool:
        for _ in range(100):
            if method in out["notifications"]:
                return True
            got.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(got.wait(), 0.1)
        return False

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(
            read, write, elicitation_callback=on_elicit, message_handler=on_message
        ) as session,
    ):
        out["initialize"] = dump(await session.initialize())["protocolVersion"]
        out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        out["who"] = [(await session.call_tool("whoami", {})).content[0].text for _ in range(6)]
        out["add"] = [
            (await session.call_tool("add", {"a": i, "b": 1})).content[0].text for i in range(6)
        ]
        progress: list[Any] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append([value, total, message])

        count = await session.call_tool("count", {"to": 3}, progress_callback=on_progress)
        out["count"] = count.content[0].text
        out["progress"] = progress
        out["resource"] = dump(await session.read_resource("notes://welcome"))["contents"][0][
            "text"
        ]
        out["prompt"] = dump(await session.get_prompt("hello", {"name": "Ada"}))["messages"][0][
            "content"
        ]["text"]
        await session.set_logging_level("debug")
        await session.subscribe_resource("notes://welcome")
        out["confirm"] = [
            (await session.call_tool("confirm", {"question": f"ok {i}?"})).content[0].text
            for i in range(3)
        ]
        # Changes caused on whichever replica, heard on the GET stream wherever it is.
        out["grow"] = (await session.call_tool("grow", {"name": "extra1"})).content[0].text
        out["heard_list_changed"] = await until("notifications/tools/list_changed")
        out["tick"] = (await session.call_tool("tick", {"times": 1})).content[0].text
        out["heard_prompts_changed"] = await until("notifications/prompts/list_changed")
        out["touch"] = (
            (await session.call_tool("touch", {"uri": "notes://welcome"})).content[0].text
        )
        out["heard_updated"] = await until("notifications/resources/updated")
        out["ping"] = dump(await session.send_ping())
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
