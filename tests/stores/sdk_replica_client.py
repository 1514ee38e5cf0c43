"""The official SDK client through a load balancer: a whole handshake-era conversation.
Usage: python sdk_replica_client.py URL. Prints JSON of what it saw."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sdk_conversation import common_calls, confirm_calls, dump, elicitation_recorder


async def main(url: str) -> None:
    out: dict[str, Any] = {"notifications": []}
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
            read,
            write,
            elicitation_callback=elicitation_recorder(out),
            message_handler=on_message,
        ) as session,
    ):
        await common_calls(session, out)
        out["prompt"] = dump(await session.get_prompt("hello", {"name": "Ada"}))["messages"][0][
            "content"
        ]["text"]
        await session.set_logging_level("debug")
        await session.subscribe_resource("notes://welcome")
        await confirm_calls(session, out)
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
