"""The official SDK's legacy HTTP+SSE client (``mcp.client.sse.sse_client``, 2024-11-05)
through a load balancer: its GET /sse stream stays on one replica while each POST lands on
any. Usage: python sdk_sse_replica_client.py URL. Prints JSON of what it saw."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import mcp_types as types
from mcp import ClientSession
from mcp.client.sse import sse_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(url: str) -> None:
    out: dict[str, Any] = {"asked": []}

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            out.setdefault("errors", []).append(repr(message))

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        out["asked"].append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with (
        sse_client(url) as (read, write),
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
        # Elicitation: the answer is a POST of its own, on whichever replica.
        out["confirm"] = [
            (await session.call_tool("confirm", {"question": f"ok {i}?"})).content[0].text
            for i in range(3)
        ]
        out["ping"] = dump(await session.send_ping())
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
