"""Drive a server with the official SDK client; print what it saw as JSON.

python sdk_client.py stdio -- COMMAND [ARGS...]
python sdk_client.py http URL
Run as a subprocess by tests/bridge/test_bridge_sdk.py (the SDK runs on asyncio).
"""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import AsyncExitStack
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def error(exc: BaseException) -> dict[str, Any]:
    err = getattr(exc, "error", None)
    return {
        "type": type(exc).__name__,
        "code": getattr(err, "code", None),
        "message": getattr(err, "message", str(exc)),
    }


async def main(mode: str, target: list[str]) -> None:
    out: dict[str, Any] = {}
    progress: list[Any] = []
    async with AsyncExitStack() as stack:
        if mode == "stdio":
            params = StdioServerParameters(command=target[0], args=target[1:])
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            read, write, *_ = await stack.enter_async_context(streamable_http_client(target[0]))
        session = await stack.enter_async_context(ClientSession(read, write))
        out["initialize"] = dump(await session.initialize())
        out["tools"] = dump(await session.list_tools())
        out["echo"] = dump(await session.call_tool("echo", {"text": "héllo"}))
        out["fail"] = dump(await session.call_tool("fail", {"reason": "test"}))
        out["resources"] = dump(await session.list_resources())
        out["greeting"] = dump(await session.read_resource("mem://greeting"))
        try:
            await session.read_resource("mem://missing")
        except Exception as exc:  # MCPError for a JSON-RPC error
            out["missing"] = error(exc)
        out["prompts"] = dump(await session.list_prompts())
        out["review"] = dump(await session.get_prompt("review", {"code": "x = 1"}))

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append([value, total, message])

        # Times out after 3 s: the SDK client then sends notifications/cancelled.
        try:
            await session.call_tool(
                "slow", {}, read_timeout_seconds=3, progress_callback=on_progress
            )
        except Exception as exc:
            out["slow"] = error(exc)
        out["progress"] = progress
        await asyncio.sleep(1.5)  # let the cancellation cross both hops
    print(json.dumps(out))


if __name__ == "__main__":
    argv = sys.argv[1:]
    mode = argv.pop(0)
    if argv and argv[0] == "--":
        argv = argv[1:]
    asyncio.run(main(mode, argv))
